// Reads an image archive the way a runtime does: index.json -> manifest ->
// config and layers, and unpacks the layers into a root filesystem directory.
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCommand } from '@warmpool/harness';
import { z } from 'zod';

/** tar run to its end behind the harness's watchdog; a failure throws with its stderr. */
async function tar(args: string[]): Promise<void> {
  const result = await runCommand({ command: 'tar', args, timeoutMs: 300_000 });
  if (result.code !== 0)
    throw new Error(`tar ${args.join(' ')} exited ${result.code ?? result.signal}:\n${result.stderr}`);
}

const Descriptor = z.object({
  mediaType: z.string(),
  digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  size: z.number(),
  annotations: z.record(z.string(), z.string()).optional(),
});
const Index = z.object({ schemaVersion: z.literal(2), manifests: z.array(Descriptor).length(1) });
const Manifest = z.object({ schemaVersion: z.literal(2), config: Descriptor, layers: z.array(Descriptor).min(1) });
const Config = z.object({
  architecture: z.string(),
  os: z.string(),
  config: z.object({
    User: z.string(),
    Entrypoint: z.array(z.string()).min(1),
    Cmd: z.array(z.string()).nullish(),
    Env: z.array(z.string()).default([]),
    WorkingDir: z.string().optional(),
    Labels: z.record(z.string(), z.string()).default({}),
  }),
});

export interface UnpackedImage {
  /** The image's name as the archive's index annotates it. */
  name: string | undefined;
  config: z.infer<typeof Config>['config'];
  layerMediaTypes: string[];
  rootfs: string;
  remove(): Promise<void>;
}

/**
 * Unpacks `archive` (an OCI layout in a tar) into a fresh directory. Layers are applied in order; the images here have
 * one, so whiteouts never occur.
 */
export async function unpackImage(archive: string): Promise<UnpackedImage> {
  const dir = await mkdtemp(join(tmpdir(), 'warmpool-image-'));
  try {
    const layout = join(dir, 'layout');
    const rootfs = join(dir, 'rootfs');
    await mkdir(layout);
    await mkdir(rootfs);
    await tar(['-xf', archive, '-C', layout]);
    const blob = (digest: string) => join(layout, 'blobs', 'sha256', digest.slice('sha256:'.length));
    const json = async (path: string): Promise<unknown> => JSON.parse(await readFile(path, 'utf8'));
    const index = Index.parse(await json(join(layout, 'index.json')));
    const top = index.manifests[0] as z.infer<typeof Descriptor>;
    const manifest = Manifest.parse(await json(blob(top.digest)));
    const config = Config.parse(await json(blob(manifest.config.digest)));
    for (const layer of manifest.layers) {
      // --same-owner/--same-permissions: as root, keep what the image says (root-owned files, a 1777 /tmp).
      await tar(['--same-owner', '--same-permissions', '-xf', blob(layer.digest), '-C', rootfs]);
    }
    await rm(layout, { recursive: true, force: true });
    return {
      name: top.annotations?.['io.containerd.image.name'],
      config: config.config,
      layerMediaTypes: manifest.layers.map((l) => l.mediaType),
      rootfs,
      remove: () => rm(dir, { recursive: true, force: true }),
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
