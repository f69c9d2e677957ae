#!/usr/bin/env bash
# Build Dockerfile.cpu for real, without Docker or a registry, and check the report from inside.
#
#   sudo scripts/test-container.sh            # needs root, buildah and debootstrap
#   sudo scripts/test-container.sh --install  # apt-get install buildah debootstrap first
#
# 1. debootstrap a Debian bookworm root filesystem with python3 and commit it as a local base image;
# 2. serve a local package index (torch CPU and torchdoctor's dependencies, fetched with this
#    machine's pip configuration) on 127.0.0.1;
# 3. build Dockerfile.cpu with buildah (--isolation chroot) against that base and that index;
# 4. run `torchdoctor check --json --expect cpu` inside the image and assert on the report, then
#    once more with a 64 MiB tmpfs on /dev/shm (unshare -m) and assert the warning and its fix;
# 5. build Dockerfile.cuda the same way and check its NVIDIA variables and `--expect cuda` exit 1.
# Everything lives in one temporary directory (its own buildah storage) that is removed at exit.
#
# Environment: DEBIAN_MIRROR [http://deb.debian.org/debian], DEBIAN_SUITE [bookworm],
# PYTHON [python3] (runs pip download and the index server), TORCH_VERSION [2.13.0],
# TORCH_CPU_INDEX [unset] an extra index for the torch CPU wheel, KEEP_WORKDIR=1 to keep the
# temporary directory (and its buildah storage) for inspection.
# Exit status: 0 passed, 1 failed, 77 this machine cannot run it (not root, no apt, no network).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=${DEBIAN_SUITE:-bookworm}
TARGET_PY=3.11 # bookworm's python3
PY=${PYTHON:-python3}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}

log() { printf '[test-container %4ss] %s\n' "$SECONDS" "$*" >&2; }
die() {
  log "FAIL: $*"
  exit 1
}
# Exit 77 ("skipped") when this machine cannot run the test at all: no root, no packages, no
# Debian mirror or package index. That is not a failure of the code; .ci/run reports it as a skip.
cannot() {
  log "SKIP: $*"
  exit 77
}

if [ "${1:-}" = "--install" ]; then
  [ "$(id -u)" -eq 0 ] || cannot "--install needs root"
  if ! command -v buildah >/dev/null || ! command -v debootstrap >/dev/null; then
    log "installing buildah and debootstrap"
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q buildah debootstrap; } \
      >/dev/null 2>&1 || cannot "apt-get could not install buildah and debootstrap"
  fi
fi
[ "$(id -u)" -eq 0 ] || cannot "run as root (debootstrap and buildah --isolation chroot need it)"
for tool in buildah debootstrap unshare; do
  command -v "$tool" >/dev/null || cannot "$tool is missing: apt-get install -y buildah debootstrap (or pass --install)"
done

WORK=$(mktemp -d /var/tmp/td-container.XXXXXX)
B=(buildah --root "$WORK/storage" --runroot "$WORK/run" --storage-driver vfs)
SERVER_PID=
cleanup() {
  local rc=$?
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
  if [ "${KEEP_WORKDIR:-0}" = 1 ]; then
    log "kept $WORK (buildah --root $WORK/storage --runroot $WORK/run --storage-driver vfs ...)"
  else
    "${B[@]}" rm --all >/dev/null 2>&1 || true
    "${B[@]}" rmi --all --force >/dev/null 2>&1 || true
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT

# --- 1. base image: Debian + python3, from Debian's packages ---------------------------------
log "debootstrap $SUITE from $MIRROR"
ctr=$("${B[@]}" from scratch)
mnt=$("${B[@]}" mount "$ctr")
debootstrap --variant=minbase --include=python3,python3-venv "$SUITE" "$mnt" "$MIRROR" \
  >"$WORK/debootstrap.log" 2>&1 || {
  tail -20 "$WORK/debootstrap.log" >&2
  cannot "debootstrap from $MIRROR failed"
}
rm -rf "$mnt"/var/cache/apt/archives/*.deb "$mnt"/var/lib/apt/lists/*
"${B[@]}" umount "$ctr" >/dev/null
# From here on a failure is the code's, so first make sure this machine can run containers at all.
"${B[@]}" run --isolation chroot "$ctr" -- python3 -c 'import venv' >/dev/null 2>&1 ||
  cannot "buildah cannot run a container here (--isolation chroot)"
unshare -m true 2>/dev/null || cannot "unshare -m (a private mount namespace) is not allowed here"
"${B[@]}" config --cmd /bin/bash "$ctr"
"${B[@]}" commit --quiet "$ctr" localhost/td-base:"$SUITE" >/dev/null
"${B[@]}" rm "$ctr" >/dev/null

# --- 2. a local package index ----------------------------------------------------------------
log "fetching wheels for Python $TARGET_PY into a local index"
# torch pinned to its +cpu local version: where the CPU wheel cannot be found, fail (skip) rather
# than fetch PyPI's multi-GB CUDA build. TORCH_CPU_INDEX adds https://download.pytorch.org/whl/cpu
# or a mirror of it where this machine's pip configuration does not provide the CPU wheel.
# torchdoctor's own dependencies are read from pyproject.toml, so a new one cannot be left out
# here (libcst once was: "No matching distribution found for libcst>=1.1" in the image build).
mapfile -t DEPENDENCIES < <("$PY" -c '
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["dependencies"]))' "$REPO/pyproject.toml") || true
[ "${#DEPENDENCIES[@]}" -gt 0 ] || cannot "$PY could not read the dependencies from pyproject.toml (needs Python 3.11+)"
"$PY" -m pip download --quiet --dest "$WORK/files" --only-binary=:all: \
  ${TORCH_CPU_INDEX:+--extra-index-url "$TORCH_CPU_INDEX"} \
  --python-version "$TARGET_PY" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform linux_x86_64 \
  "torch==$TORCH_VERSION+cpu" "setuptools>=77" "${DEPENDENCIES[@]}" ||
  cannot "pip could not download the wheels (torch $TORCH_VERSION+cpu and torchdoctor's dependencies)"
"$PY" - "$WORK" <<'EOF'
import html, re, sys
from pathlib import Path

work = Path(sys.argv[1])
projects = {}
for wheel in sorted((work / "files").glob("*.whl")):
    name = re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower()  # PEP 503 normalised
    projects.setdefault(name, []).append(wheel.name)
for name, wheels in projects.items():
    page = work / "index" / "simple" / name / "index.html"
    page.parent.mkdir(parents=True)
    links = "".join(f'<a href="../../files/{html.escape(w)}">{html.escape(w)}</a>\n' for w in wheels)
    page.write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
(work / "index" / "files").symlink_to(work / "files")
EOF
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$PY" -m http.server --bind 127.0.0.1 --directory "$WORK/index" "$PORT" >"$WORK/http.log" 2>&1 &
SERVER_PID=$!
INDEX="http://127.0.0.1:$PORT/simple"
for _ in $(seq 50); do
  "$PY" -c "import urllib.request; urllib.request.urlopen('$INDEX/torch/')" 2>/dev/null && break
  sleep 0.1
done

# --- 3. build Dockerfile.cpu ----------------------------------------------------------------
log "building Dockerfile.cpu on localhost/td-base:$SUITE"
build_image() { # DOCKERFILE TAG LOG: build on the local base from the local index
  "${B[@]}" bud --quiet --isolation chroot --network host -f "$REPO/$1" \
    --build-arg BASE_IMAGE=localhost/td-base:"$SUITE" \
    --build-arg TORCH_VERSION="$TORCH_VERSION" \
    --build-arg TORCH_INDEX_URL="$INDEX" \
    --build-arg PIP_INDEX_URL="$INDEX" \
    -t "$2" "$REPO" >"$WORK/$3" 2>&1 || {
    tail -30 "$WORK/$3" >&2
    die "buildah bud -f $1 failed"
  }
}
build_image Dockerfile.cpu localhost/torchdoctor:cpu-test build.log
"${B[@]}" inspect --type image localhost/torchdoctor:cpu-test >"$WORK/image.json"
"${B[@]}" images --format '{{.Name}}:{{.Tag}} {{.Size}}' | sed 's/^/  image: /' >&2

# --- 4. run the report inside the image -------------------------------------------------------
log "running torchdoctor check --json --expect cpu inside the image"
ctr=$("${B[@]}" from localhost/torchdoctor:cpu-test)
set +e
"${B[@]}" run --isolation chroot "$ctr" -- torchdoctor check --json --expect cpu \
  >"$WORK/report.json" 2>"$WORK/report.err"
rc=$?
# chroot isolation shares the host's /dev, so the small tmpfs goes on /dev/shm in a private mount
# namespace around `buildah run` (buildah's own --mount type=tmpfs does not reach /dev/shm there).
log "same, with a 64 MiB tmpfs on /dev/shm"
unshare -m sh -c 'mount -t tmpfs -o size=64m tmpfs /dev/shm && exec "$@"' sh \
  "${B[@]}" run --isolation chroot "$ctr" -- torchdoctor check --json --expect cpu --only container \
  >"$WORK/report-small-shm.json" 2>"$WORK/report-small-shm.err"
rc_small=$?
set -e
[ "$rc" -eq 0 ] || {
  cat "$WORK/report.err" >&2
  die "torchdoctor check exited $rc inside the image"
}
[ "$rc_small" -eq 0 ] || die "torchdoctor check (small shm) exited $rc_small inside the image"

"$PY" - "$WORK" <<'EOF'
import json, sys
from pathlib import Path

work = Path(sys.argv[1])
config = json.loads((work / "image.json").read_text())["OCIv1"]["config"]
assert config["Entrypoint"] == ["torchdoctor"], config["Entrypoint"]
assert config["Cmd"] == ["check"], config["Cmd"]
assert config["User"] == "10001:10001", config["User"]

report = json.loads((work / "report.json").read_text())
checks = {c["id"]: c for c in report["checks"]}
facts = report["facts"]
assert report["status"] != "fail", report["status"]
assert facts["torch"]["status"] == "ok", facts["torch"]
assert facts["torch"]["build"]["variant"] == "cpu", facts["torch"]["build"]
assert facts["platform"]["python_version"].startswith("3.11"), facts["platform"]
assert facts["container"]["detected"] is True, facts["container"]
assert facts["container"]["shm"]["size_bytes"] > 0, facts["container"]["shm"]
assert "/dev/shm" in checks["container"]["summary"], checks["container"]
print(f"  inside the image: {checks['container']['status']}: {checks['container']['summary']}")
print(f"  torch {facts['torch']['version']}, Python {facts['platform']['python_version']}, "
      f"interpreter {facts['platform']['executable']}")

small = {c["id"]: c for c in json.loads((work / "report-small-shm.json").read_text())["checks"]}
c = small["container"]
assert c["status"] == "warn", c
assert c["details"]["shm"]["size_bytes"] == 64 * 1024**2, c["details"]["shm"]
advice = " ".join(r["text"] for r in c["remedies"])  # options of the user's own `docker run`
assert "--shm-size=" in advice, c["remedies"]
print(f"  64 MiB /dev/shm: {c['status']}: {c['summary']}")
EOF

# --- 5. Dockerfile.cuda: builds, and asks the NVIDIA runtime for a GPU -------------------------
# This machine's package index has no CUDA build of torch (and no GPU), so the CPU wheel from the
# local index stands in: this proves the file builds and runs, and that --expect cuda fails
# without a GPU. SKIP_CUDA_IMAGE=1 leaves it out.
if [ "${SKIP_CUDA_IMAGE:-0}" != 1 ]; then
  log "building Dockerfile.cuda (the local CPU wheel standing in for the CUDA one)"
  build_image Dockerfile.cuda localhost/torchdoctor:cuda-test build-cuda.log
  "${B[@]}" inspect --type image localhost/torchdoctor:cuda-test >"$WORK/image-cuda.json"
  ctr=$("${B[@]}" from localhost/torchdoctor:cuda-test)
  set +e
  "${B[@]}" run --isolation chroot "$ctr" -- torchdoctor check --json --expect cuda \
    >"$WORK/report-cuda.json" 2>"$WORK/report-cuda.err"
  rc_cuda=$?
  set -e
  [ "$rc_cuda" -eq 1 ] || die "--expect cuda without a GPU exited $rc_cuda, not 1"
  "$PY" - "$WORK" <<'EOF'
import json, sys
from pathlib import Path

work = Path(sys.argv[1])
config = json.loads((work / "image-cuda.json").read_text())["OCIv1"]["config"]
assert "NVIDIA_VISIBLE_DEVICES=all" in config["Env"], config["Env"]
assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in config["Env"], config["Env"]
assert config["Entrypoint"] == ["torchdoctor"], config["Entrypoint"]
assert config["Cmd"] == ["check", "--expect", "cuda"], config["Cmd"]
assert config["User"] == "10001:10001", config["User"]
report = json.loads((work / "report-cuda.json").read_text())
assert report["facts"]["env"]["NVIDIA_VISIBLE_DEVICES"] == "all", report["facts"]["env"]
checks = {c["id"]: c for c in report["checks"]}
assert checks["cuda.available"]["status"] == "fail", checks["cuda.available"]
print(f"  cuda image, --expect cuda: exit 1, cuda.available: {checks['cuda.available']['summary']}")
EOF
fi
log "PASS"
