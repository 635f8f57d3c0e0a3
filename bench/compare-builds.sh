#!/usr/bin/env bash
# Attributes setup time to changes: the flannel-style chain (bridge + host-local with hairpin and a
# default gateway, + portmap without mappings; chain (a) of bench/run) exec'd directly for every
# given build, in interleaved rounds (order rotated) so that every build sees the same machine load, plus the
# floor program (bench/floor.c, linked against the last build's libweft.a if it has one).
#
#   bench/compare-builds.sh [-n PODS] [-r ROUNDS] NAME=BUILD_DIR [NAME=BUILD_DIR ...]
#
# BUILD_DIR/bin holds bridge, host-local and portmap. Prints one line per build: medians over all
# rounds (ms) of the chain's ADD and DEL and of each step. Needs root; everything happens in
# network namespaces named cb<PID>-* created here and removed on exit (no traffic leaves them).
set -euo pipefail

N=20
ROUNDS=3
while getopts "n:r:" o; do
	case $o in
	n) N=$OPTARG ;;
	r) ROUNDS=$OPTARG ;;
	*) sed -n '2,12p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '2,12p' "$0"; exit 2; }
[ "$(id -u)" = 0 ] || { echo "compare-builds: needs root" >&2; exit 77; }

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
W=$(mktemp -d /tmp/weft-cmp.XXXXXX)
P=cb$$
cleanup() {
	ip netns list | awk '{print $1}' | grep "^$P-" | sed 's/^/netns del /' | ip -force -batch - 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT
cc -O2 -std=gnu17 -Wall -Wextra -Werror -o "$W/benchexec" "$TOP/bench/benchexec.c"
LAST=${!#}
LAST=${LAST#*=}
FLOOR=""
if [ -f "$LAST/libweft.a" ]; then
	# shellcheck disable=SC2046
	cc -O2 -std=gnu17 -D_GNU_SOURCE -I"$TOP/src" -I"$TOP/src/shared" $(pkg-config --cflags jansson libmnl libnftables) \
		-o "$W/floor" "$TOP/bench/floor.c" "$LAST/libweft.a" $(pkg-config --libs jansson libmnl libnftables) && FLOOR=$W/floor
fi

names=()
k=0
for spec in "$@"; do
	name=${spec%%=*} dir=${spec#*=}
	names+=("$name")
	k=$((k + 1))
	mkdir -p "$W/$name/ipam"
	jq -nc --arg name "cbnet$k" --arg br "cb$k" --arg sub "10.$((230 + k)).1.0/24" --arg nw "10.$((230 + k)).0.0/16" --arg dd "$W/$name/ipam" \
		'{cniVersion:"1.0.0", name:$name, type:"bridge", bridge:$br, hairpinMode:true, isGateway:true, isDefaultGateway:true,
		  ipMasq:false, ipam:{type:"host-local", ranges:[[{subnet:$sub}]], routes:[{dst:$nw}], dataDir:$dd}}' >"$W/$name/s0.json"
	jq -nc --arg name "cbnet$k" '{cniVersion:"1.0.0", name:$name, type:"portmap", capabilities:{portMappings:true}}' >"$W/$name/s1.json"
	echo "$dir" >"$W/$name/dir"
done
ip netns add "$P-node"
ip -n "$P-node" link set lo up
for ((i = 1; i <= N; i++)); do echo "netns add $P-p$i"; done | ip -batch -

for ((round = 1; round <= ROUNDS; round++)); do
	# Rotate the order every round: a build's ADDs run while the previous build's DELs are still
	# being cleaned up by the kernel (deferred netdev and RCU work), which no build should always get.
	order=()
	for ((j = 0; j < ${#names[@]}; j++)); do order+=("${names[(j + round) % ${#names[@]}]}"); done
	for name in "${order[@]}"; do
		dir=$(cat "$W/$name/dir")
		b=$dir/bin
		for op in ADD DEL; do
			for ((i = 1; i <= N; i++)); do
				if [ $op = ADD ]; then
					echo "CNI_COMMAND=ADD CNI_CONTAINERID=c$i CNI_NETNS=/run/netns/$P-p$i CNI_IFNAME=eth0 CNI_PATH=$b <$W/$name/s0.json $b/bridge :: <$W/$name/s1.json $b/portmap"
				else
					echo "CNI_COMMAND=DEL CNI_CONTAINERID=c$i CNI_NETNS=/run/netns/$P-p$i CNI_IFNAME=eth0 CNI_PATH=$b <$W/$name/s1.json @$W/$name/res-$i $b/portmap :: <$W/$name/s0.json @$W/$name/res-$i $b/bridge"
				fi
			done >"$W/cmds"
			rm -rf "$W/out" && mkdir -p "$W/out"
			ip netns exec "$P-node" "$W/benchexec" -o "$W/out" -l "$W/lat" <"$W/cmds" 2>"$W/err" ||
				{ echo "compare-builds: $name $op failed: $(cat "$W"/out/*.err | head -3)" >&2; exit 1; }
			cat "$W/lat" >>"$W/$name/$op.lat"
			awk -v n="$N" '/^cpu_us/ {print $2 / n}' "$W/err" >>"$W/$name/$op.cpu"
			if [ $op = ADD ]; then for ((i = 1; i <= N; i++)); do cp "$W/out/$((i - 1)).out" "$W/$name/res-$i"; done; fi
		done
	done
	if [ -n "$FLOOR" ]; then
		for op in add del; do
			ip netns exec "$P-node" "$FLOOR" -H -b cbfl -s 10.230 -p "/run/netns/$P-p%d" -o $op -l "$W/fl" 1 "$N" 2>"$W/err" &&
				cat "$W/fl" >>"$W/floor-${op^^}.lat" && awk -v n="$N" '/^cpu_us/ {print $2 / n}' "$W/err" >>"$W/floor-${op^^}.cpu"
		done
	fi
done

med() { sort -n | awk '{v[NR] = $1} END { if (NR) printf "%.3f", ((NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) / 1000; else printf "n/a" }'; }
F='%-16s %9s %9s %9s %9s %9s %9s %9s %9s\n'
# shellcheck disable=SC2059
printf "$F" build "ADD" "bridge" "portmap" "ADD cpu" "DEL" "portmap" "bridge" "DEL cpu"
for name in "${names[@]}"; do
	# shellcheck disable=SC2059
	printf "$F" "$name" \
		"$(awk '{print $2}' "$W/$name/ADD.lat" | med)" "$(awk '{print $5}' "$W/$name/ADD.lat" | med)" "$(awk '{print $6}' "$W/$name/ADD.lat" | med)" \
		"$(med <"$W/$name/ADD.cpu")" \
		"$(awk '{print $2}' "$W/$name/DEL.lat" | med)" "$(awk '{print $5}' "$W/$name/DEL.lat" | med)" "$(awk '{print $6}' "$W/$name/DEL.lat" | med)" \
		"$(med <"$W/$name/DEL.cpu")"
done
if [ -n "$FLOOR" ]; then
	# shellcheck disable=SC2059
	printf "$F" floor "$(awk '{print $2}' "$W/floor-ADD.lat" | med)" "" "" "$(med <"$W/floor-ADD.cpu")" \
		"$(awk '{print $2}' "$W/floor-DEL.lat" | med)" "" "" "$(med <"$W/floor-DEL.cpu")"
fi
echo "($N pods x $ROUNDS rounds per build; medians in ms: wall of the chain and of each step, and CPU"
echo " (user+system of every process of the chain, per pod, median over the rounds); direct exec)"
