#!/usr/bin/env bash
# test_leaks.sh TEST_ERRORS: run the bad-input test (one rank) under valgrind and fail on any
# block lost through Tide's code. MPI_Init's own lost blocks (Open MPI's, outside our control)
# are told apart by their stacks: a record counts when a frame is a tide_ function (every way
# into the library passes through one). Exit 77 (skip) without valgrind.
set -u
exe=$1
if ! command -v valgrind > /dev/null; then
    echo "SKIP: valgrind is not installed"
    exit 77
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
OMPI_MCA_btl=self,vader valgrind --leak-check=full --show-leak-kinds=definite,indirect \
    --num-callers=40 --error-exitcode=0 "$exe" > /dev/null 2> "$log"
status=$?
if [ $status -ne 0 ]; then
    echo "FAIL: test_errors under valgrind exited with $status"
    tail -20 "$log"
    exit 1
fi
# One loss record per paragraph: print those whose stack passes through Tide.
ours=$(awk '/are (definitely|indirectly) lost in loss record/ { rec = $0; keep = 0; inrec = 1; next }
            inrec && /^==[0-9]+== *$/ { if (keep) print rec; inrec = 0; next }
            inrec { rec = rec "\n" $0; if ($0 ~ /: tide_/) keep = 1 }' "$log")
total=$(grep -c 'lost in loss record' "$log")
if [ -n "$ours" ]; then
    echo "FAIL: memory lost through Tide's code:"
    echo "$ours"
    exit 1
fi
echo "test_leaks: $total loss records, all from outside Tide (MPI_Init); none through Tide"
