#!/usr/bin/env bash
# The one gate: installs what the tests need, then formatting, clippy (-D warnings) and every test.
# CI (.ci/run) runs exactly this; so should you before pushing.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
# The package also ships /etc/redis/redis.conf, which config_files.rs starts densekv from.
{ command -v redis-server >/dev/null 2>&1 && [ -f /etc/redis/redis.conf ]; } || need_apt+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need_apt+=(redis-tools)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing ${need_apt[*]} (differential-test oracle)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# redis-server from the package starts a service on 6379 on some systems; our tests never use it.

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo clippy (expensive-checks) -D warnings"
cargo clippy -p heap --all-targets --features expensive-checks -- -D warnings
echo "== cargo test --profile ci (release code, no LTO)"
cargo test --workspace --profile ci

if [ -d tests/python ]; then
  echo "== client tests (redis-py, pytest)"
  python3 -m pip install -q --disable-pip-version-check redis pytest >/dev/null
  cargo build --release -p server
  target_dir=$(cargo metadata --format-version 1 --no-deps \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
  DENSEKV_BIN="$target_dir/release/densekv" python3 -m pytest tests/python -q
fi
