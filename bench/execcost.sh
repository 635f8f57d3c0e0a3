#!/usr/bin/env bash
# Exec cost of the host suite (issue #18): what one plugin exec costs before it does any work,
# per build, beside the exec floor of a trivial C program, static and dynamic. Then the flannel
# chain (bridge + host-local + portmap ADD and DEL) of every build via bench/compare-builds.sh.
#
#   bench/execcost.sh [-n EXECS] [-p PODS] [-r ROUNDS] [-c] NAME=BUILD_DIR [NAME=BUILD_DIR ...]
#
# -c: no chain (a build that can only start, e.g. one linked for this table alone).
# Per build: CNI_COMMAND=VERSION of bridge and of portmap, EXECS times each (default 2000),
# sequential, timed by bench/benchexec (fork + exec + wait, no shell); medians and p90 of the
# wall time in µs, CPU (user + system) per exec, and the stripped size and linkage of the file.
# The floors: `int main(void) { return 0; }` built with -static and without. Prints a Markdown
# table. Needs root only for the chain (network namespaces, via compare-builds.sh).
set -euo pipefail
N=2000 PODS=20 ROUNDS=3 CHAIN=1
while getopts "n:p:r:c" o; do
	case $o in
	n) N=$OPTARG ;;
	p) PODS=$OPTARG ;;
	r) ROUNDS=$OPTARG ;;
	c) CHAIN=0 ;;
	*) sed -n '2,15p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '2,15p' "$0"; exit 2; }
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
W=$(mktemp -d /tmp/weft-execcost.XXXXXX)
trap 'rm -rf "$W"' EXIT
cc -O2 -std=gnu17 -Wall -Wextra -Werror -o "$W/benchexec" "$TOP/bench/benchexec.c"
printf 'int main(void) { return 0; }\n' >"$W/t.c"
cc -O2 -static -o "$W/floor-static" "$W/t.c"
cc -O2 -o "$W/floor-dynamic" "$W/t.c"

# stats EXE [ENV...]: "median p90 cpu" (µs) over N sequential execs
stats() {
	local exe=$1 i
	shift
	for ((i = 0; i < N; i++)); do echo "$* $exe"; done >"$W/cmds"
	"$W/benchexec" -l "$W/lat" <"$W/cmds" 2>"$W/err" || { echo "execcost: $exe failed" >&2; exit 1; }
	awk '{print $2}' "$W/lat" | sort -n | awk -v cpu="$(awk '/^cpu_us/ {print $2}' "$W/err")" -v n="$N" \
		'{v[NR] = $1} END {printf "%d %d %.0f\n", v[int((NR + 1) / 2)], v[int(NR * 0.9)], cpu / n}'
}
# instr EXE [ENV...]: user-space instructions of one exec (valgrind's callgrind: the loader's
# relocations and symbol lookups included, the kernel's exec not; independent of machine load)
instr() {
	local exe=$1
	shift
	env "$@" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$exe" </dev/null 2>&1 >/dev/null |
		awk '/Collected :/ {print $NF}'
}
linkage() { if [[ $(readelf -lW "$1") == *INTERP* ]]; then echo dynamic; else echo static; fi; }
ssize() { strip -o "$W/s" "$1" && stat -c %s "$W/s"; }

echo "| what | linkage | stripped bytes | exec median µs | p90 µs | CPU µs/exec | instructions (user) |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for f in floor-static floor-dynamic; do
	read -r med p90 cpu < <(stats "$W/$f")
	echo "| trivial C program ($f) | $(linkage "$W/$f") | $(ssize "$W/$f") | $med | $p90 | $cpu | $(instr "$W/$f") |"
done
for spec in "$@"; do
	name=${spec%%=*} dir=${spec#*=}
	for p in bridge portmap; do
		read -r med p90 cpu < <(stats "$dir/bin/$p" CNI_COMMAND=VERSION)
		echo "| $name: $p VERSION | $(linkage "$dir/bin/$p") | $(ssize "$dir/bin/$p") | $med | $p90 | $cpu | $(instr "$dir/bin/$p" CNI_COMMAND=VERSION) |"
	done
	# the suite: every distinct file among the plugin names
	total=0
	declare -A seen=()
	for f in "$dir"/bin/*; do
		if [ ! -x "$f" ] || [ "${f##*/}" = weftd ]; then continue; fi
		ino=$(stat -c %i "$f")
		[ -z "${seen[$ino]:-}" ] || continue
		seen[$ino]=1
		total=$((total + $(ssize "$f")))
	done
	unset seen
	echo "| $name: whole plugin suite (distinct files) | | $total | | | | |"
done
echo
echo "($N sequential execs each; wall from fork to wait, CPU of the children from getrusage; load average"
echo " while measuring: $(cut -d' ' -f1-3 /proc/loadavg))"
if [ "$(id -u)" = 0 ] && [ "$CHAIN" = 1 ]; then
	echo
	"$TOP/bench/compare-builds.sh" -n "$PODS" -r "$ROUNDS" "$@"
fi
