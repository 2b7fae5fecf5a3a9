#!/bin/sh
# The Debian packages the suites drive for real (issue 14: `npm test` is the whole set-up). Each is
# checked with dpkg and installed from Debian's archive only when missing, saying what it installs;
# without root it stops at once with the one command to run.
#   chromium                       browser tests (Playwright drives Debian's Chromium)
#   curl                           mediated-egress tests run real curl inside a sandbox
#   docker-registry apache2-utils  Debian's distribution registry with htpasswd (bcrypt) auth (ADR 0012)
#   busybox-static                 the base image and the microVM guest's init
#   openssl                        throwaway certificates that sign registry tokens
#   qemu-system-x86 linux-image-cloud-amd64 e2fsprogs   microVM sandboxes (ADR 0011)
#   golang-go golang-golang-x-mod-dev  Go's sumdb/tlog and sumdb/note check the transparency log (ADR 0026)
#   faketime                       ID tokens are verified past their exp under a shifted clock (ADR 0024)
#   python3-cryptography           a stored secret decrypts with an AES-GCM nobody on the team wrote (ADR 0025)
#   mmdebstrap                     toolchain images are built from Debian's archive, reproducibly (ADR 0040)
#   prometheus                     promtool tests the alert rules; the metrics e2e scrapes with it (ADR 0043)
#   skopeo                         reads the deployable images' OCI layout back, independently of our writer (ADR 0046)
#   kubernetes-client              `kubectl kustomize` renders deploy/kubernetes for its schema check (ADR 0046);
#                                  any kubectl already on PATH (a newer one from elsewhere) does as well
set -eu
PACKAGES="chromium curl docker-registry apache2-utils busybox-static openssl qemu-system-x86 linux-image-cloud-amd64 e2fsprogs golang-go golang-golang-x-mod-dev faketime python3-cryptography mmdebstrap prometheus skopeo"
missing=""
for pkg in $PACKAGES; do
  dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing="$missing $pkg"
done
command -v kubectl >/dev/null 2>&1 || missing="$missing kubernetes-client"
[ -z "$missing" ] && exit 0
missing=${missing# }
if [ "$(id -u)" -ne 0 ]; then
  echo "kiln: the test suites need Debian packages that are not installed:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends $missing" >&2
  exit 1
fi
echo "kiln: installing Debian packages the suites need: $missing" >&2
apt-get update -qq
# shellcheck disable=SC2086 # word splitting of the package list is intended
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
