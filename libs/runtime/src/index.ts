export * from './logger.js';
export * from './duration.js';
export * from './address.js';
export * from './config.js';
export * from './lifecycle.js';
export * from './http.js';
export * from './request.js';
export * from './incoming-body.js';
