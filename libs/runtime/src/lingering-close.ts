// A connection closed while its request's body may still be arriving is
// closed gently. Closing a socket with unread bytes in it makes the kernel
// answer the client with a reset; a client still writing the body then sees
// its write fail (EPIPE, ECONNRESET), and when that error reaches it before
// the answer does, the answer is lost: the client gets a broken connection
// instead of the 413 and its reason. So, as Go's server and nginx's lingering
// close do, the server ends its side once the answer is written and destroys
// the socket LINGER_MS later: long enough for a client to read the answer,
// short enough that a client stalled mid-body cannot hold a socket, or
// close(), for longer.
//
// Nothing more of the body is read meanwhile (a refusal reads no further than
// its cap): the socket stops reading and stays stopped, whoever asks it to
// resume (Node dumps an unread request body after its answer); what the
// client still sends waits in the kernel's buffers until the socket goes.
import type { Socket } from 'node:net';

/** How long a connection closed with its request's body unread stays open after the answer, at most. */
export const LINGER_MS = 500;

/** Turns Node's close of `socket` after its last answer (`destroySoon`) into a lingering one. */
export function lingerAtClose(socket: Socket): void {
  socket.destroySoon = () => {
    if (socket.destroyed) return;
    socket.pause();
    socket.resume = () => socket;
    socket.end();
    // Not unref'd: server.close() waits for this socket, so the timer must run even when nothing else would.
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    socket.once('close', () => clearTimeout(timer));
  };
}
