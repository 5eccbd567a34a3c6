#!/usr/bin/env bash
# Builds one small, non-root OCI image per app without a container engine:
#
#   images/build.sh [APP...]     # default: control-plane node-agent fake-sandboxd router
#   -> .local/images/<app>.oci.tar   (an OCI image layout in a tar, named
#      $IMAGE_REGISTRY/<app>:$IMAGE_TAG; `docker load` / `kind load image-archive`)
#   images/build.sh pause redis  # what the harness's real nodes need besides the apps:
#   -> .local/images/pause.oci.tar (localhost/warmpool/pause:1, the pod sandbox;
#      images/pause/pause.go, static) and .local/images/redis.oci.tar
#      (localhost/warmpool/redis:7-bookworm, Debian's redis-server, uid 999)
#
# Nothing is pulled from a registry. The root filesystem is glibc and libstdc++
# from Debian's packages (mmdebstrap --variant=extract: the packages' files, no
# maintainer scripts, no shell, no package manager), plus the Node.js 24 binary
# the Makefile installed from the npm package, plus the app's production files
# chosen by the allow-list below. buildah (daemonless, vfs storage) only adds
# that directory to an empty image, sets its config and commits it: no
# `buildah run`, so no container runtime, namespaces or overlay mounts are
# needed, which is why this works on a plain VM kernel as root.
#
# Cached: each image records the sha256 of its staged files and config, and is
# rebuilt only when that changes; the Debian root filesystem is cached per
# suite + package list + snapshot.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT="$ROOT/.local/images"
CACHE="${WARMPOOL_CACHE:-$HOME/.cache/warmpool}"
NODE_BIN="${NODE_BIN:-$CACHE/node-24/bin/node}"
REGISTRY="${IMAGE_REGISTRY:-ghcr.io/warmpool}"
VERSION=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$ROOT/charts/warmpool/Chart.yaml")
TAG="${IMAGE_TAG:-$VERSION}"
SUITE="${DEBIAN_SUITE:-bookworm}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
# What Node.js links against (ldd node: libc, libm, libstdc++, libgcc_s), the
# files that say what the image is (/etc/os-release), and /etc/services & co.
PACKAGES="libc6,libgcc-s1,libstdc++6,base-files,netbase"
UID_GID=65532
export STORAGE_DRIVER=vfs BUILDAH_ISOLATION=chroot
BUILDAH=(buildah --storage-driver vfs)

log() { echo "[images $(date +%H:%M:%S)] $*" >&2; }

[[ $(id -u) == 0 ]] || { echo "images: run as root (buildah's vfs storage and the chroot-extracted rootfs need it)" >&2; exit 1; }
for tool in buildah mmdebstrap; do
  command -v "$tool" >/dev/null || { echo "images: $tool is missing (apt-get install buildah mmdebstrap; \`make images\` does it)" >&2; exit 1; }
done
[[ -x "$NODE_BIN" ]] || { echo "images: no Node.js at $NODE_BIN (make node)" >&2; exit 1; }
mkdir -p "$OUT/cache"
# One build at a time per checkout: specs running side by side (the images',
# the chart's on real nodes, the harness's) each ask for the images; the
# later ones then find them up to date instead of committing over each other.
exec 9>"$OUT/.build.lock"
flock 9

# The Debian part, shared by every image.
debian_rootfs() {
  local key; key=$(printf '%s\n' "$SUITE" "$PACKAGES" "$MIRROR" "$SECURITY_MIRROR" | sha256sum | cut -c1-16)
  local tarball="$OUT/cache/debian-$SUITE-$key.tar"
  if [[ ! -f "$tarball" ]]; then
    log "assembling the Debian $SUITE root filesystem ($PACKAGES)"
    # status.d: the control file of every package, where image scanners
    # (trivy, syft, grype) look for the Debian packages of a distroless image.
    mmdebstrap --quiet --mode=root --format=tar --variant=extract --include="$PACKAGES" \
      --skip=output/dev \
      --customize-hook='mkdir -p "$1/var/lib/dpkg/status.d" && for d in "$1"/var/cache/apt/archives/*.deb; do dpkg-deb -f "$d" > "$1/var/lib/dpkg/status.d/$(dpkg-deb -f "$d" Package)"; done' \
      "$SUITE" "$tarball.tmp" \
      "deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" "deb $SECURITY_MIRROR $SUITE-security main" >&2
    mv "$tarball.tmp" "$tarball"
  fi
  echo "$tarball"
}

# The allow-list (what a .dockerignore would leave in): the app's and its
# workspace libraries' package.json and compiled JavaScript, and the production
# dependency closure `npm ls --omit=dev` names. Sources, tests, maps, type
# declarations, dev dependencies and anything else on the host stay out.
# Copies the NUL-separated paths on stdin (relative to the current directory) to $1.
copy_list() { tar --null --no-recursion -T - -cf - | tar -xf - -C "$1"; }

stage_app() {
  local app=$1 dir=$2
  local ws="apps/$app"
  [[ -f "$ROOT/$ws/dist/main.js" ]] || { echo "images: $ws/dist/main.js is missing (npx tsc -b)" >&2; exit 1; }
  mkdir -p "$dir/app"
  local paths
  # npm ls exits non-zero on any tree complaint (an extraneous or invalid package elsewhere) but still lists the tree;
  # the checks below and the image test catch a missing package.
  paths=$(cd "$ROOT" && { npm ls --omit=dev --all --parseable --workspace "$ws" 2>/dev/null || true; } | sed -n "s|^$ROOT/||p" | sort -u)
  [[ -n "$paths" ]] || { echo "images: npm ls found no production dependencies for $ws" >&2; exit 1; }
  local p
  while IFS= read -r p; do
    if [[ -L "$ROOT/$p" ]]; then
      # A workspace package: node_modules/@warmpool/x -> ../../libs/x.
      local target; target=$(cd "$ROOT" && realpath --relative-to=. "$p")
      mkdir -p "$dir/app/$(dirname "$p")" "$dir/app/$target"
      cp -P "$ROOT/$p" "$dir/app/$p"
      cp "$ROOT/$target/package.json" "$dir/app/$target/"
      (cd "$ROOT/$target" && find dist -name '*.js' -print0 | copy_list "$dir/app/$target")
    else
      # A registry package, without what only a compiler or a debugger reads
      # (types, maps, TypeScript sources). Its own node_modules are listed separately.
      [[ $p == node_modules/@types/* ]] && continue
      (cd "$ROOT" && find "$p" -path "$p/node_modules" -prune -o \( -name '*.map' -o -name '*.ts' -o -name '*.mts' -o -name '*.cts' \) -type f -o -print0 | copy_list "$dir/app")
    fi
  done <<<"$paths"
}

# Commits the directory $3 as the image $2 with the buildah config options that
# follow, into the archive $4, and records the inputs' hash $6 in $5.
commit_image() {
  local app=$1 name=$2 stage=$3 archive=$4 stamp=$5 inputs=$6
  shift 6
  local config=("$@")
  local revision; revision=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
  # Named per process: builds in other checkouts on this machine share buildah's storage.
  local ctr="warmpool-image-$app-$$"
  "${BUILDAH[@]}" from --name "$ctr" scratch >/dev/null
  WORKING_CONTAINERS+=("$ctr")
  "${BUILDAH[@]}" copy --quiet "$ctr" "$stage" / >/dev/null
  "${BUILDAH[@]}" config "${config[@]}" --label "org.opencontainers.image.revision=$revision" "$ctr"
  local layout="$OUT/work/$app"
  rm -rf "$layout"; mkdir -p "$(dirname "$layout")"
  "${BUILDAH[@]}" commit --quiet --format oci --disable-compression=false --identity-label=false --timestamp "$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)" \
    "$ctr" "oci:$layout:$name" >/dev/null
  # Name the image for both loaders: containerd (kind, Docker ≥ 25 with the
  # containerd store) reads io.containerd.image.name; the OCI ref name is the full reference too.
  node -e '
    const fs = require("fs"); const [file, name] = process.argv.slice(1);
    const index = JSON.parse(fs.readFileSync(file, "utf8"));
    for (const m of index.manifests) m.annotations = { ...m.annotations, "io.containerd.image.name": name, "org.opencontainers.image.ref.name": name };
    fs.writeFileSync(file, JSON.stringify(index));' "$layout/index.json" "$name"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$layout" -cf "$archive.tmp" oci-layout index.json blobs
  mv "$archive.tmp" "$archive"
  echo "$inputs" >"$stamp"
  rm -rf "$layout" "$stage"
}

build_image() {
  local app=$1 rootfs=$2
  local name="$REGISTRY/$app:$TAG"
  local archive="$OUT/$app.oci.tar" stamp="$OUT/$app.inputs.sha256"
  local stage="$OUT/stage/$app"
  rm -rf "$stage"; mkdir -p "$stage"
  # Device nodes, apt's configuration and the docs (but each package's
  # copyright) are not part of an image.
  tar -xf "$rootfs" -C "$stage" --exclude='./dev' --exclude='./etc/apt' --exclude='./etc/dpkg' \
    --exclude='./var/cache/apt' --exclude='./var/lib/apt' --exclude='./usr/lib/x86_64-linux-gnu/gconv' \
    --exclude='./usr/share/lintian' --exclude='./usr/share/locale' --exclude='./usr/share/man' \
    --exclude='./usr/share/info' --exclude='./usr/share/gcc' --exclude='./usr/share/gdb' \
    --exclude='./etc/hostname' --exclude='./etc/resolv.conf' --exclude='./etc/fstab'
  find "$stage/usr/share/doc" -type f ! -name copyright -delete 2>/dev/null || true
  install -D -m 0755 "$NODE_BIN" "$stage/usr/local/bin/node"
  mkdir -p "$stage/etc" "$stage/tmp" "$stage/home/nonroot"
  chmod 1777 "$stage/tmp"
  printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nnonroot:x:%s:%s:nonroot:/home/nonroot:/usr/sbin/nologin\n' $UID_GID $UID_GID >"$stage/etc/passwd"
  printf 'root:x:0:\nnonroot:x:%s:\n' $UID_GID >"$stage/etc/group"
  chown $UID_GID:$UID_GID "$stage/home/nonroot"
  stage_app "$app" "$stage"

  local description; description=$(cd "$ROOT" && node -p "require('./apps/$app/package.json').description")
  local config=(
    --entrypoint "[\"/usr/local/bin/node\", \"/app/apps/$app/dist/main.js\"]"
    --cmd ''
    --user "$UID_GID:$UID_GID"
    --workingdir /app
    --env NODE_ENV=production
    --label "org.opencontainers.image.title=warmpool-$app"
    --label "org.opencontainers.image.description=$description"
    --label "org.opencontainers.image.version=$TAG"
    --label "org.opencontainers.image.source=https://github.com/warmpool/warmpool"
    --label "org.opencontainers.image.licenses=Apache-2.0"
    --label "dev.warmpool.image.base=debian:$SUITE (packages: $PACKAGES) + node $("$NODE_BIN" --version)"
  )
  [[ -f "$stage/app/node_modules/@warmpool/$app/package.json" ]] || { echo "images: staging $app left out its own package" >&2; exit 1; }
  # The stamp covers the files (content, mode, owner, links) and the config, not
  # timestamps or the git revision: a rebuild happens only when the image would differ.
  local inputs
  inputs=$( { (cd "$stage" && find . -print0 | LC_ALL=C sort -z | xargs -0 stat -c '%n %a %u:%g %s %N' && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum); printf '%s\n' "$name" "${config[@]}"; } | sha256sum | cut -d' ' -f1)
  if [[ -f "$archive" && -f "$stamp" && $(cat "$stamp") == "$inputs" ]]; then
    log "$app: up to date ($archive)"
    rm -rf "$stage"
    return
  fi

  log "$app: committing $name"
  commit_image "$app" "$name" "$stage" "$archive" "$stamp" "$inputs" "${config[@]}"
  log "$app: $(du -h "$archive" | cut -f1) -> $archive"
}

# The pod sandbox image for the harness's real nodes: one static Go program.
build_pause() {
  local name=localhost/warmpool/pause:1 archive="$OUT/pause.oci.tar" stamp="$OUT/pause.inputs.sha256"
  local stage="$OUT/stage/pause"
  command -v go >/dev/null || { echo "images: the pause image needs the Go toolchain" >&2; exit 1; }
  rm -rf "$stage"; mkdir -p "$stage"
  (cd "$ROOT/images/pause" && CGO_ENABLED=0 GOFLAGS= GO111MODULE=off go build -trimpath -ldflags '-s -w' -o "$stage/pause" pause.go)
  local config=(--entrypoint '["/pause"]' --cmd '' --user 65535:65535 --label "org.opencontainers.image.title=warmpool-pause")
  local inputs; inputs=$(cd "$ROOT/images/pause" && { sha256sum pause.go; go version; printf '%s\n' "$name" "${config[@]}"; } | sha256sum | cut -d' ' -f1)
  if [[ -f "$archive" && -f "$stamp" && $(cat "$stamp") == "$inputs" ]]; then log "pause: up to date ($archive)"; rm -rf "$stage"; return; fi
  log "pause: committing $name"
  commit_image pause "$name" "$stage" "$archive" "$stamp" "$inputs" "${config[@]}"
  log "pause: $(du -h "$archive" | cut -f1) -> $archive"
}

# The chart's optional in-chart Redis (redis.enabled) for the harness's nodes:
# Debian's redis-server and the libraries it links, run as the chart's uid 999.
REDIS_PACKAGES="redis-server,redis-tools,libc6,libssl3,libjemalloc2,liblzf1,libsystemd0,libcap2,libgcrypt20,libgpg-error0,liblz4-1,liblzma5,libzstd1,base-files,netbase"
build_redis() {
  local name=localhost/warmpool/redis:7-bookworm archive="$OUT/redis.oci.tar" stamp="$OUT/redis.inputs.sha256"
  local key; key=$(printf '%s\n' "$SUITE" "$REDIS_PACKAGES" "$MIRROR" "$SECURITY_MIRROR" | sha256sum | cut -c1-16)
  local config=(--entrypoint '["/usr/bin/redis-server"]' --cmd '' --user 999:999 --workingdir /data
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    --label "org.opencontainers.image.title=warmpool-redis"
    --label "dev.warmpool.image.base=debian:$SUITE (packages: $REDIS_PACKAGES)")
  local inputs; inputs=$(printf '%s\n' "$key" "$name" "${config[@]}" | sha256sum | cut -d' ' -f1)
  if [[ -f "$archive" && -f "$stamp" && $(cat "$stamp") == "$inputs" ]]; then log "redis: up to date ($archive)"; return; fi
  local stage="$OUT/stage/redis"
  rm -rf "$stage"; mkdir -p "$stage"
  log "redis: assembling Debian $SUITE's redis-server"
  mmdebstrap --quiet --mode=root --format=directory --variant=extract --include="$REDIS_PACKAGES" --skip=output/dev \
    "$SUITE" "$stage" "deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" "deb $SECURITY_MIRROR $SUITE-security main" >&2
  rm -rf "$stage/dev" "$stage/etc/apt" "$stage/var/cache/apt" "$stage/var/lib/apt" "$stage/usr/share/doc" "$stage/usr/share/man" "$stage/usr/share/locale"
  mkdir -p "$stage/data" "$stage/tmp"; chmod 1777 "$stage/tmp"; chown 999:999 "$stage/data"
  printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nredis:x:999:999:redis:/data:/usr/sbin/nologin\n' >"$stage/etc/passwd"
  printf 'root:x:0:\nredis:x:999:\n' >"$stage/etc/group"
  [[ -x "$stage/usr/bin/redis-server" ]] || { echo "images: redis-server is missing from the staged Debian packages" >&2; exit 1; }
  log "redis: committing $name"
  commit_image redis "$name" "$stage" "$archive" "$stamp" "$inputs" "${config[@]}"
  log "redis: $(du -h "$archive" | cut -f1) -> $archive"
}

# Working containers are removed however the script ends.
WORKING_CONTAINERS=()
remove_working_containers() { for c in "${WORKING_CONTAINERS[@]}"; do "${BUILDAH[@]}" rm "$c" >/dev/null 2>&1 || true; done; }
trap remove_working_containers EXIT

apps=("$@")
[[ ${#apps[@]} -gt 0 ]] || apps=(control-plane node-agent fake-sandboxd router)
rootfs=
for app in "${apps[@]}"; do
  case "$app" in
    pause) build_pause ;;
    redis) build_redis ;;
    *) [[ -n "$rootfs" ]] || rootfs=$(debian_rootfs); build_image "$app" "$rootfs" ;;
  esac
done
