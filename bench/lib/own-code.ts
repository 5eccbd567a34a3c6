// Which frames of a V8 profile are our own code: apps, libs and the bench's
// own servers, never a dependency under node_modules. One definition for the
// CPU profile's and the heap sampler's attributions.

export function isOwnCode(url: string): boolean {
  return /\/(apps|libs)\/|\/bench\/lib\//.test(url) && !url.includes('/node_modules/');
}
