#!/usr/bin/env bash
# CI hook: scripts/gpu-check --fake (gpuguard against the fake driver, no GPU)
# into a fresh temporary directory. Fails unless the check's last line reads
# "N passed, 0 failed" with N > 0 and the driver-API checks ran (a missing fake
# driver is only a SKIP there). Run from anywhere: bash tests/gpu-check-fake.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-fake.XXXXXX")
stdout=$out.stdout
status=0
scripts/gpu-check --fake "$out" | tee "$stdout" || status=$?
last=$(tail -n 1 "$stdout")
ran=$(grep -c '^PASS route-' "$stdout" || true)
rm -f "$stdout"
if [[ $last =~ ^([0-9]+)\ passed,\ 0\ failed$ ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] &&
	[ "$status" -eq 0 ] && [ "$ran" -gt 0 ]; then
	rm -rf "$out"
	exit 0
fi
echo "gpu-check-fake: expected 'N passed, 0 failed' with N > 0 as the last line and the" \
	"route checks passed; got '$last', $ran route checks passed, exit status $status;" \
	"the full log is $out/gpu-check.log" >&2
exit 1
