# tests/checks.sh: the tally and checks of the shell tests, sourced by test_app.sh and
# test_heat3d.sh once they have set $mpiexec. Each run's output goes to $tmp/NAME.out.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# run_prog PROGRAM NAME EXPECT(0|nonzero|STATUS) NP ARGS...: PROGRAM under mpiexec on NP ranks,
# stdout and stderr in $tmp/NAME.out; 30 s limit (a hang fails); a number other than 0 must be
# the exit status exactly.
run_prog() {
    local prog=$1 name=$2 expect=$3 np=$4
    shift 4
    timeout -k 10 30 "$mpiexec" -n "$np" "$prog" "$@" > "$tmp/$name.out" 2>&1
    local rc=$?
    if [ "$rc" -eq 124 ]; then
        bad "$name: timed out (hang?): $(basename "$prog") $*"
        return 1
    fi
    if { [ "$expect" = 0 ] && [ "$rc" -ne 0 ]; } || { [ "$expect" != 0 ] && [ "$rc" -eq 0 ]; } ||
       { [ "$expect" != nonzero ] && [ "$rc" -ne "$expect" ]; }; then
        bad "$name: exit status $rc, expected $expect: $(basename "$prog") $*"
        sed 's/^/    /' "$tmp/$name.out" | head -20
        return 1
    fi
    ok
}

# refuse_prog PROGRAM NAME NP STATUS PATTERN ARGS...: PROGRAM under mpiexec on NP ranks must
# fail quickly with exit status STATUS (a number, or nonzero) and PATTERN on stderr; stdout in
# $tmp/NAME.out, stderr in $tmp/NAME.err; a hang is killed after 60 s (status 124, or 137 when
# mpirun ignores the TERM) and fails.
refuse_prog() {
    local prog=$1 name=$2 np=$3 expect=$4 pat=$5
    shift 5
    timeout -k 10 60 "$mpiexec" -n "$np" "$prog" "$@" > "$tmp/$name.out" 2> "$tmp/$name.err"
    local rc=$?
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] ||
       { [ "$expect" != nonzero ] && [ "$rc" -ne "$expect" ]; }; then
        bad "$name: exit status $rc, expected a quick failure ($expect): $(basename "$prog") $*"
        sed 's/^/    /' "$tmp/$name.err" | head -20
        return 1
    fi
    if ! grep -Eq -- "$pat" "$tmp/$name.err"; then
        bad "$name: stderr lacks /$pat/"
        sed 's/^/    /' "$tmp/$name.err" | head -20
        return 1
    fi
    ok
}

# has NAME PATTERN: the output of NAME matches the extended regex.
has() {
    if grep -Eq -- "$2" "$tmp/$1.out"; then
        ok
    else
        bad "$1: output lacks /$2/"
        sed 's/^/    /' "$tmp/$1.out" | head -20
        return 1
    fi
}

# has_err NAME PATTERN: the stderr of the refused run NAME matches the extended regex.
has_err() {
    if grep -Eq -- "$2" "$tmp/$1.err"; then
        ok
    else
        bad "$1: stderr lacks /$2/"
        sed 's/^/    /' "$tmp/$1.err" | head -20
        return 1
    fi
}

# terse NAME: the failed run NAME said why in at most three lines of its own, then one hint
# to --help, without a usage text (its stderr, else its output).
terse() {
    local f="$tmp/$1.err"
    [ -f "$f" ] || f="$tmp/$1.out"
    local own hints
    own=$(grep -Ec '^(tide|heat3d)( [a-z]+)?: ' "$f")
    hints=$(grep -Ec "^Try '(tide|heat3d)( [a-z]+)? --help'\.$" "$f")
    if [ "$own" -ge 1 ] && [ "$own" -le 3 ] && [ "$hints" -eq 1 ] && ! grep -q '^usage:' "$f"; then
        ok
    else
        bad "$1: expected at most 3 lines of message and one --help hint, no usage ($own, $hints)"
        sed 's/^/    /' "$f" | head -20
    fi
}

# before_alloc NAME PATTERN: the refused run NAME printed its header (PATTERN) on stdout.
before_alloc() {
    if grep -Eq -- "$2" "$tmp/$1.out"; then ok; else bad "$1: no header /$2/ before the refusal"; fi
}
