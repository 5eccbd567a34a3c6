// A node view's state as the driver's metrics label it.
import type { NodeStateLabel } from '../controllers/warmpool/metrics.js';
import type { NodeView } from './tracker.js';

/** The metric state of a node view. */
export function nodeStateOf(view: NodeView): NodeStateLabel {
  switch (view.exclusion) {
    case undefined:
      return 'ready';
    case 'stale':
      return 'stale';
    case 'failing':
      return 'failing';
    case 'draining':
      return 'draining';
    case 'no-address':
      return 'no_address';
    case 'impossible-generation':
      return 'impossible_generation';
    case 'unverified-address':
      return 'unverified_address';
  }
}
