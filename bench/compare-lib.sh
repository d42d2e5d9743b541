# compare-lib.sh: what the bench/compare-* scripts share (they source it): a program's
# "Key: value" lines, runs whose failures are counted, the machine they ran on.

# The value of a "Key: value ..." line of a program's output (first match), or empty.
get_key() {
    sed -n "s/^[[:space:]]*$1:[[:space:]]*\([-+0-9.eEinfa]*\).*/\1/p" <<<"$2" | head -n 1
}

failures=0
# Runs a command with its output in $out; on a failure (an exit status, or a "Verification:
# FAILED" line) prints the output's tail, counts it in $failures and returns 1.
run() {
    local status=0
    out=$("$@" 2>&1) || status=$?
    if [[ $status -ne 0 ]] || grep -q '^Verification: FAILED' <<<"$out"; then
        failures=$((failures + 1))
        echo "  FAILED (exit $status): $*" >&2
        tail -n 30 <<<"$out" | sed 's/^/    | /' >&2
        return 1
    fi
}

# "N CPUs, MODEL" of this machine.
machine_line() {
    local model
    model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)
    echo "$(nproc) CPUs, ${model:-unknown}"
}
