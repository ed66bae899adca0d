# Sourced by scripts/test and scripts/demo: make sure the build's Debian
# packages are here, installing the missing ones when run as root.
gg_need() {
	local missing=()
	command -v meson >/dev/null || missing+=(meson)
	command -v ninja >/dev/null || missing+=(ninja-build)
	command -v pkg-config >/dev/null || missing+=(pkg-config)
	command -v cc >/dev/null || missing+=(gcc)
	command -v c++ >/dev/null || missing+=(g++)
	command -v python3 >/dev/null || missing+=(python3)
	command -v readelf >/dev/null || missing+=(binutils)
	# The library's call-site unwinder: its header at build time, found as
	# meson finds it (the library itself is loaded at run time).
	pkg-config --exists libunwind 2>/dev/null || missing+=(libunwind-dev)
	if [ "${1:-}" = tests ]; then
		pkg-config --exists criterion 2>/dev/null || missing+=(libcriterion-dev)
		# gpuguard(1) is checked by groff (tests/test-docs.c).
		command -v groff >/dev/null || missing+=(groff-base)
		# The C style (.clang-format) is checked (scripts/style).
		command -v clang-format >/dev/null || missing+=(clang-format)
		# A third-party driver client (tests/test-clients.c). Debian's own
		# interpreter: a python3 earlier on PATH may not see Debian's packages.
		/usr/bin/python3 -c 'import numba' 2>/dev/null || missing+=(python3-numba)
		# The JSON summaries are validated against docs/summary.schema.json.
		/usr/bin/python3 -c 'import jsonschema' 2>/dev/null || missing+=(python3-jsonschema)
		# ...and the SARIF files against SARIF 2.1.0's, URIs included.
		/usr/bin/python3 -c 'import rfc3987' 2>/dev/null || missing+=(python3-rfc3987)
		# The virtual environment of NVIDIA's Python clients (scripts/pyenv).
		/usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
		# Every metrics file the tests read passes promtool check metrics, the
		# alert rules pass promtool test rules, and a node-exporter scrapes them.
		command -v promtool >/dev/null || missing+=(prometheus)
		command -v prometheus-node-exporter >/dev/null || missing+=(prometheus-node-exporter)
	fi
	# The Debian package, built and installed (scripts/test-deb).
	if [ "${1:-}" = deb ]; then
		command -v dpkg-buildpackage >/dev/null || missing+=(dpkg-dev)
		command -v dh >/dev/null || missing+=(debhelper)
		[ "$(dpkg-query -W -f='${Status}' build-essential 2>/dev/null)" = "install ok installed" ] ||
			missing+=(build-essential)
		# The installed man page is formatted, the metrics checked.
		command -v groff >/dev/null || missing+=(groff-base)
		command -v promtool >/dev/null || missing+=(prometheus)
	fi
	for p in ${GG_EXTRA_PACKAGES:-}; do missing+=("$p"); done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
		echo "installing: ${missing[*]}" >&2
		export DEBIAN_FRONTEND=noninteractive
		# Packages with a daemon (prometheus, its node exporter) must not start
		# one: where no policy says so already, one that refuses every start
		# is in place for the install, and removed after it.
		local policy=/usr/sbin/policy-rc.d ours=0 rc=0
		if [ ! -e "$policy" ]; then
			printf '#!/bin/sh\n# scripts/deps.sh: no service starts while it installs\nexit 101\n' >"$policy" &&
				chmod 755 "$policy" && ours=1
		fi
		{ apt-get update -qq >&2 && apt-get install -y -qq "${missing[@]}" >&2; } || rc=$?
		[ "$ours" = 1 ] && rm -f "$policy"
		[ "$rc" = 0 ] && return 0
		echo "error: apt-get could not install: ${missing[*]}" >&2
		return 1
	fi
	echo "error: missing Debian packages; as root run: apt-get install ${missing[*]}" >&2
	return 1
}

gg_cuda_include() {
	local d
	for d in "${GG_TOOLKIT_INCLUDE:-}" "${CUDA_HOME:+$CUDA_HOME/include}" \
		"${CUDA_PATH:+$CUDA_PATH/include}" /usr/local/cuda/include; do
		[ -n "$d" ] && [ -e "$d/cuda.h" ] && { echo "$d"; return 0; }
	done
	echo "error: cuda.h from the CUDA toolkit not found in \$CUDA_HOME/include," \
		"\$CUDA_PATH/include or /usr/local/cuda/include; install the toolkit or set CUDA_HOME" >&2
	return 1
}

# ldconfig lives in /sbin, which a user's PATH may lack.
gg_ldconfig() {
	if command -v ldconfig >/dev/null; then ldconfig "$@"; else /sbin/ldconfig "$@"; fi
}
