# shellcheck shell=bash
# Helpers for bench/run: namespaces (all named wb<PID>-*, removed in the EXIT trap), process
# tracking, statistics, CSV/report accumulation. Sourced by bench/run only.

NSP="wb$$"                      # prefix of every namespace we create
_PIDS_FILE=$W/pids

bench_cleanup() {
	local rc=$? p
	trap - EXIT INT TERM
	if [ -f "$_PIDS_FILE" ]; then
		while read -r p; do kill "$p" 2>/dev/null || true; done <"$_PIDS_FILE"
		sleep 0.2
		while read -r p; do kill -9 "$p" 2>/dev/null || true; done <"$_PIDS_FILE"
	fi
	ns_del_all
	# cnitool's result cache entries of our networks (<net>-<containerid>-<ifname>)
	rm -f /var/lib/cni/results/"$NSP"-* 2>/dev/null || true
	rm -rf "$W"
	exit "$rc"
}

track_pid() { echo "$1" >>"$_PIDS_FILE"; }
untrack_kill() { # PID: stop a process we started
	kill "$1" 2>/dev/null || true
	local i
	for ((i = 0; i < 50; i++)); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.05; done
	kill -9 "$1" 2>/dev/null || true
}

# ns_add NAME: create $NSP-NAME with lo up; prints the full name
ns_add() {
	local ns="$NSP-$1"
	ip netns add "$ns"
	ip -n "$ns" link set lo up
	echo "$ns"
}
# ns_add_many PREFIX FROM TO: pods $NSP-PREFIXi, via one ip -batch (fast for 1000s)
ns_add_many() {
	local p=$1 from=$2 to=$3 i
	for ((i = from; i <= to; i++)); do echo "netns add $NSP-$p$i"; done | ip -batch -
}
# ns_del_prefix PREFIX: delete every namespace of ours whose name starts with $NSP-PREFIX
ns_del_prefix() {
	ip netns list | awk '{print $1}' | grep "^$NSP-$1" | sed 's/^/netns del /' | ip -force -batch - 2>/dev/null || true
}
ns_del_all() { ns_del_prefix ""; }
nsp() { echo "/run/netns/$NSP-$1"; }

log() { printf '%s\n' "$*" >&2; }
say() { printf '%s\n' "$*"; }

# stats_us: reads µs values (one per line) -> "median p95 max n" in ms (3 decimals)
stats_us() {
	sort -n | awk '{v[NR]=$1} END {
		if (NR == 0) { print "nan nan nan 0"; exit }
		m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2
		k = int(0.95 * NR); if (k < 0.95 * NR) k++; if (k < 1) k = 1
		printf "%.3f %.3f %.3f %d\n", m/1000, v[k]/1000, v[NR]/1000, NR }'
}
# ratio A B: A/B with 1 decimal ("n/a" if either is missing or zero)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a+0 > 0 && b+0 > 0) printf "%.1f", a/b; else print "n/a" }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (a+0 > 0 && b+0 > 0) printf "%.0f", 100*a/b; else print "n/a" }'; }
# ge A B -> success if A >= B (floats)
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a+0 >= b+0) }'; }

# md FILE TEXT...: append a line to a report fragment
md() { local f=$1; shift; printf '%s\n' "$*" >>"$f"; }
# target NAME VALUE VERDICT NOTE: one row of the targets table
target() { printf '| %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" >>"$W/targets.md"; }

# Every section of REPORT.md opens with one verdict word and the ratio it rests on: the least
# favourable one the section measured (write_report prints it under the section's header).
# verdict_ratio SECTION RATIO SHOWN WHAT [BETTER WORSE]: RATIO is weft's standing, > 1 when weft is
# better (reference time / weft time, weft throughput / baseline, ...); SHOWN is how the report prints
# it ("1.2×", "86 % of the underlay"). The section keeps the smallest RATIO. Its word: par when
# RATIO prints as 1.0, else BETTER (default faster) above and WORSE (default slower) below.
verdict_ratio() {
	local f=$W/md/$1.vr cur
	[[ $2 =~ ^[0-9]*\.?[0-9]+$ ]] || return 0
	if [ -f "$f" ]; then
		read -r cur _ <"$f"
		ge "$2" "$cur" && return 0
	fi
	printf '%s\t%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "${5:-faster}" "${6:-slower}" >"$f"
}
# verdict_pct SECTION PCT WHAT: verdict_ratio for a percentage of a baseline
verdict_pct() {
	[[ $2 =~ ^[0-9]+$ ]] || return 0
	verdict_ratio "$1" "$(awk -v p="$2" 'BEGIN { printf "%.2f", p / 100 }')" "$2 % of the underlay baseline" "$3"
}
# verdict SECTION WORD TEXT: the verdict of a section with nothing to compare with (met / missed)
verdict() { printf '**Verdict: %s** %s\n' "$2" "$3" >"$W/md/$1.verdict"; }
# verdict_line SECTION: the section's verdict line
verdict_line() {
	local r shown what better worse word
	if [ -f "$W/md/$1.verdict" ]; then
		cat "$W/md/$1.verdict"
	elif [ -f "$W/md/$1.vr" ]; then
		IFS=$'\t' read -r r shown what better worse <"$W/md/$1.vr"
		word=$better
		if [ "$(awk -v r="$r" 'BEGIN { printf "%.1f", r }')" = 1.0 ]; then word=par; elif ! ge "$r" 1; then word=$worse; fi
		echo "**Verdict: $word** $shown ($what)"
	else
		echo "**Verdict: none** (nothing in this run to compare with)"
	fi
}
