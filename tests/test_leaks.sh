#!/usr/bin/env bash
# test_leaks.sh TEST_ERRORS: run the bad-input test (one rank, an MPI singleton) under valgrind
# and fail on
#  - any memory error valgrind reports (an invalid read or write, a jump or a system call on
#    uninitialised values, a bad free, ...) except those wholly inside code outside our control:
#    the errors whose stack passes through MPI_Init, MPI_Init_thread or MPI_Finalize (Open MPI
#    and the PMIx, hwloc and UCX it runs there; Tide registers nothing MPI calls back) or
#    through _dl_init (a shared library's constructors, run by the loader: CUDA's libraries
#    dlopen others there; Tide has no constructors) are suppressed, every other one fails,
#    Tide's and the test's alike;
#  - any block lost through Tide's code. MPI_Init's own lost blocks (Open MPI's, outside our
#    control) are told apart by their stacks: a record counts when a frame is a tide_ function
#    (every way into the library passes through one).
# Exit 77 (skip) without valgrind.
set -u
exe=$1
if ! command -v valgrind > /dev/null; then
    echo "SKIP: valgrind is not installed"
    exit 77
fi
log=$(mktemp)
supp=$(mktemp)
trap 'rm -f "$log" "$supp"' EXIT
# One suppression per error kind and entry point (MPI_Init and MPI_Init_thread match the first):
# "..." lets the entry point lie anywhere below the error. A system call's parameter is named
# exactly (valgrind takes no wildcard there).
for entry in '*MPI_Init*' '*MPI_Finalize' _dl_init; do
    for kind in Cond Value{1,2,4,8,16,32} Addr{1,2,4,8,16,32} Overlap Free Jump \
                'Param\n   write(buf)' 'Param\n   writev(vector[...])' \
                'Param\n   sendmsg(msg.msg_iov[0])'; do
        printf '{\n   outside-our-control\n   Memcheck:%b\n   ...\n   fun:%s\n}\n' "$kind" "$entry"
    done
done > "$supp"
errors=97
OMPI_MCA_btl=self,vader timeout 500 valgrind --leak-check=full \
    --show-leak-kinds=definite,indirect --errors-for-leak-kinds=none --suppressions="$supp" \
    --num-callers=64 --error-exitcode=$errors "$exe" > /dev/null 2> "$log"
status=$?
if [ $status -eq $errors ]; then
    echo "FAIL: valgrind found memory errors outside MPI's start and end and library constructors:"
    sed -n '/== Command:/,/== HEAP SUMMARY:/p' "$log" | grep '^==' | head -80
    exit 1
fi
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
suppressed=$(sed -n 's/.*ERROR SUMMARY: .*(suppressed: \([0-9]*\) from.*/\1/p' "$log")
echo "test_leaks: no memory error (${suppressed:-?} in MPI's start and end or library" \
    "constructors suppressed);" \
    "$total loss records, all from outside Tide (MPI_Init); none through Tide"
