#!/usr/bin/env bash
# The man pages (man/weftd.8, man/weft.8) stay in step with the programs' --help. It fails when:
#   - a long option a help text prints has no item (.TP tag) of its own in the page;
#   - a subcommand a usage line names ("weftd uninstall", "weft cni add", "weft policy drops"...)
#     is not in the page;
#   - an option item names an option the program refuses (a flag removed or renamed in the code);
#   - groff -man -Tutf8 -ww or man -l prints any warning.
# And it shows on every run that it can fail: a copy of each page without the lines naming the help's
# first option must be reported as missing it. Needs no root and no namespace; it lives beside the
# other script tests so that tools/run-tests (make check) picks it up.
#
#   weftd --help, weftd uninstall --help                ──> --flags, "weftd uninstall"  ──> man/weftd.8
#   weft --help, weft cni|get|apply|delete|policy|service|flows|install-cni --help ──> --flags, "weft cni add"...
#                                                                                    ──> man/weft.8
#
# MAN_DIR=DIR checks the pages in DIR instead of man/ (to see the test fail on a page with a flag
# taken out: copy man/, delete one option's item, run with MAN_DIR pointing at the copy).
. "$(dirname "$0")/../lib/lib.sh"
require_cmd groff

MAN_DIR=${MAN_DIR:-$TOP/man}
WEFTD=$WEFT_BIN/weftd
WEFT=$WEFT_BUILD/tool/weft
require_built "$WEFTD"
require_built "$WEFT"

# helps PROG ARGS...: the help text of each "ARGS" (one string per run), stdout and stderr together
# (weft policy prints its usage on stderr and exits 2; what counts is the text)
helps() {
	local prog=$1 args
	shift
	for args in "$@"; do
		# shellcheck disable=SC2086 # ARGS is a word list on purpose
		"$prog" $args 2>&1 || true
	done
}

# render PAGE: the page as plain text, one paragraph per line (a wide line and no hyphenation, so an
# option is never broken across lines), no bold/underline escapes
render() {
	groff -man -Tascii -rLL=2000n -rHY=0 -P-cbou "$1" 2>/dev/null
}

# missing PROG PAGE HELP-TEXT: what HELP-TEXT names that PAGE does not document, one per line: every
# long option (it must have an item of its own: a .TP tag naming it; a mention in passing is not
# documentation), every "PROG SUB" and every "PROG SUB SUBSUB" its usage lines name ("PROG a|b x|y")
missing() {
	local prog=$1 text tags opt sub subs s ss
	text=$(render "$2")
	tags=$(tagged "$2")
	while read -r opt; do
		grep -Eq -- "(^|[^a-z0-9-])$opt([^a-z0-9-]|\$)" <<<"$tags" || echo "$opt"
	done < <(long_options "$3")
	while read -r sub subs; do
		for s in ${sub//|/ }; do
			grep -Eq "(^|[^a-z-])$prog $s([^a-z-]|\$)" <<<"$text" || echo "$prog $s"
			for ss in ${subs//|/ }; do
				grep -Eq "(^|[^a-z-])$prog $s $ss([^a-z-]|\$)" <<<"$text" || echo "$prog $s $ss"
			done
		done
	done < <(grep -Eo -- "(^|[ :])$prog [a-z][a-z|-]*( [a-z][a-z|]*)?( |\$)" <<<"$3" |
		sed -E "s/^[ :]?$prog //" | sort -u)
}

long_options() { grep -Eo -- '--[a-z][a-z0-9-]*[a-z0-9]' <<<"$1" | sort -u; }

# unknown PAGE HELP-TEXT PROBE...: long options PAGE defines (tagged) that HELP-TEXT does not print and that no
# PROBE command (a getopt parser: "weftd", "weft get"...) accepts, one per line. `PROBE --opt=x --help`
# never runs anything: getopt refuses an unknown option ("unrecognized option") or one that takes
# no argument, and a known one with its argument is followed by --help, which prints and exits.
unknown() {
	local page=$1 help=$2 opt probe known out
	shift 2
	while read -r opt; do
		grep -qx -- "$opt" < <(long_options "$help") && continue
		known=0
		for probe in "$@"; do
			# shellcheck disable=SC2086 # PROBE is a command line
			out=$($probe "$opt=x" --help 2>&1 || true)
			[[ $out == *"unrecognized option"* ]] || { known=1; break; }
		done
		((known)) || echo "$opt"
	done < <(long_options "$(tagged "$page")")
}

# tagged PAGE: the tags of PAGE's .TP items with \- as -, the places a page defines an option (its
# text may name other programs' options: kube-controller-manager's, weftd's in weft.8)
tagged() { awk 'tag { print; tag = 0 } /^\.TP/ { tag = 1 }' "$1" | sed 's/\\-/-/g'; }

# check_page PROG PAGE HELP-TEXT PROBE...
check_page() {
	local prog=$1 page=$2 help=$3 text s warn miss n
	shift 3
	[ -f "$page" ] || { check_fail "no $page"; return; }
	warn=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
	[ -z "$warn" ] || check_fail "groff -ww warns about $page: $warn"
	if command -v man >/dev/null; then
		warn=$(LC_ALL=C MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
		[ -z "$warn" ] || check_fail "man -l warns about $page: $warn"
	fi
	text=$(render "$page")
	[ -n "$text" ] || { check_fail "$page renders to nothing"; return; }
	for s in NAME SYNOPSIS DESCRIPTION FILES EXAMPLES "SEE ALSO"; do
		grep -q "^$s" <<<"$text" || check_fail "$page has no $s section"
	done
	n=$(long_options "$help" | wc -l)
	((n > 5)) || check_fail "only $n long options in $prog's help: did the help text change shape?"
	miss=$(missing "$prog" "$page" "$help")
	[ -z "$miss" ] || check_fail "$page does not document (printed by $prog's help): ${miss//$'\n'/, }"
	miss=$(unknown "$page" "$help" "$@")
	[ -z "$miss" ] || check_fail "$page documents options $prog does not have: ${miss//$'\n'/, }"
	info "$page: $n long options of $prog's help checked"

	# The check must be able to fail: a copy of the page without any line naming the help's first
	# option must be reported as missing it.
	local opt
	opt=$(long_options "$help" | grep -v -- '--help' | head -n 1)
	grep -v -F -e "$opt" -e "${opt//-/\\-}" "$page" >"$T/self-check.8"
	miss=$(missing "$prog" "$T/self-check.8" "$help")
	grep -qx -- "$opt" <<<"$miss" ||
		check_fail "self-check: $page with every line naming $opt removed was not reported missing it"
}

WEFTD_HELP=$(helps "$WEFTD" --help "uninstall --help")
WEFT_HELP=$(helps "$WEFT" --help "cni --help" "get --help" "apply --help" "delete --help" "policy --help" "service --help" "flows --help" \
	"install-cni --help")
check_page weftd "$MAN_DIR/weftd.8" "$WEFTD_HELP" "$WEFTD"
check_page weft "$MAN_DIR/weft.8" "$WEFT_HELP" "$WEFT cni" "$WEFT get" "$WEFT install-cni"
finish
