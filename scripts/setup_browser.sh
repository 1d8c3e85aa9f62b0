#!/usr/bin/env bash
# The test command's own set-up (scripts/test.sh runs it; scripts/synth.sh never does): headless
# Chromium and its driver for tests/test_site_browser.py. Any Chrome with a chromedriver on PATH
# will do; when neither is there, Debian's chromium and chromium-driver are installed if this
# runs as root with apt-get (as CI does). It never fails: when it cannot install them (not
# root, no apt-get, no network, or another process holding the dpkg lock past the wait below),
# it says why and the browser test skips, saying why too.
set -uo pipefail

have_browser() {
  command -v chromedriver >/dev/null &&
    { command -v chromium || command -v chromium-browser || command -v google-chrome; } >/dev/null
}
if have_browser; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "setup: no chromium and cannot install it (not root, or no apt-get):" \
    "the browser test will skip" >&2
  exit 0
fi
echo "setup: installing chromium and chromium-driver (apt)" >&2
# DPkg::Lock::Timeout: wait up to two minutes for a lock another process holds (apt >= 1.9).
apt=(apt-get -qq -o DPkg::Lock::Timeout=120)
if ! { "${apt[@]}" update &&
  DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y --no-install-recommends \
    chromium chromium-driver >/dev/null; }; then
  echo "setup: could not install chromium (apt failed; see above): the browser test will skip" >&2
fi
exit 0
