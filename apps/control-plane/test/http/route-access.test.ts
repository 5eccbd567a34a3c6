// The front doors' route access (src/http/access/route-access.ts): each route
// declares who may call it where it is added, and a route that declares
// nothing keeps the app from being built.
import { Hono, type Context } from 'hono';
import { describe, expect, it } from 'vitest';
import { RouteAccess } from '../../src/http/access/route-access.js';

type Env = { Variables: { user: string } };

/** A door that knows the caller by an `x-user` header and lets `alice` do anything, anyone else only `get`. */
function door(): { access: RouteAccess<Env, 'get' | 'delete'>; asked: string[] } {
  const asked: string[] = [];
  const access = new RouteAccess<Env, 'get' | 'delete'>({
    authenticate: (c: Context<Env>) => {
      const user = c.req.header('x-user');
      asked.push(`authenticate ${user ?? '-'}`);
      if (user === undefined) return Promise.resolve(c.text('who are you', 401));
      c.set('user', user);
      return Promise.resolve(undefined);
    },
    authorize: (c: Context<Env>, verb) => {
      asked.push(`authorize ${c.get('user')} ${verb} ${c.req.param('name') ?? ''}`);
      return Promise.resolve(c.get('user') === 'alice' || verb === 'get' ? undefined : c.text('no', 403));
    },
  });
  return { access, asked };
}

describe('route access', () => {
  it('refuses to build an app with a route that declares no access, naming it', () => {
    const { access } = door();
    const app = new Hono<Env>()
      .get('/open', access.open, (c) => c.text('ok'))
      .delete('/things/:name', (c) => c.text('deleted'));
    expect(() => access.assertDeclared(app)).toThrow('routes without a declared access: DELETE /things/:name');
  });

  it('asks nothing on an open route, and authenticates then authorizes the verb on an allow route', async () => {
    const { access, asked } = door();
    const app = new Hono<Env>()
      .get('/open', access.open, (c) => c.text('ok'))
      .delete('/things/:name', access.allow('delete'), (c) => c.text(`deleted by ${c.get('user')}`));
    app.all('*', access.authenticated, (c) => c.text('nothing here', 404));
    access.assertDeclared(app);

    expect((await app.request('/open')).status).toBe(200);
    expect(asked).toEqual([]);
    expect((await app.request('/things/a', { method: 'DELETE' })).status).toBe(401);
    const bob = await app.request('/things/a', { method: 'DELETE', headers: { 'x-user': 'bob' } });
    expect(bob.status).toBe(403);
    const alice = await app.request('/things/a', { method: 'DELETE', headers: { 'x-user': 'alice' } });
    expect(await alice.text()).toBe('deleted by alice');
    expect(asked).toEqual([
      'authenticate -',
      'authenticate bob',
      'authorize bob delete a',
      'authenticate alice',
      'authorize alice delete a',
    ]);
  });

  it('answers a path no route serves only to a caller it recognizes', async () => {
    const { access } = door();
    const app = new Hono<Env>().get('/open', access.open, (c) => c.text('ok'));
    app.all('*', access.authenticated, (c) => c.text('nothing here', 404));
    access.assertDeclared(app);
    expect((await app.request('/secret')).status).toBe(401);
    expect((await app.request('/secret', { headers: { 'x-user': 'bob' } })).status).toBe(404);
  });
});
