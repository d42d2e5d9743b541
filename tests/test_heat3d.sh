#!/usr/bin/env bash
# test_heat3d.sh HEAT3D MPIEXEC [png]: apps/heat3d as a user meets it: the exact discrete mode
# on 1 to 3 ranks, checkpoints restarted on another rank count bitwise equal to a run that
# never stopped, damaged, mismatched or crafted checkpoints refused (the file left as it was,
# nothing written), bad options and values out of range, results that cannot be written to
# stdout, outputs that cannot be written (found before the work, or stopping every rank
# together) and plain progress lines. With png, the PNG slices alone: exit status 77 (a SKIP)
# where heat3d was built without libpng.
set -u
heat3d=$1
mpiexec=$2
part=${3:-}
if [ $# -gt 3 ] || { [ -n "$part" ] && [ "$part" != png ]; }; then
    echo "FAIL: usage: test_heat3d.sh HEAT3D MPIEXEC [png]"
    exit 1
fi
. "$(dirname "$0")/checks.sh"

run() { run_prog "$heat3d" "$@"; }

# errs NAME NP STATUS PATTERN ARGS...: heat3d must fail quickly (checks.sh: refuse_prog).
errs() { refuse_prog "$heat3d" "$@"; }

# lacks NAME PATTERN WHY: the stdout of NAME does not match PATTERN.
lacks() {
    if grep -Eq -- "$2" "$tmp/$1.out"; then bad "$1: $3"; else ok; fi
}

# before NAME: a failed run NAME stopped before the work (no grid line on stdout).
before() {
    lacks "$1" '^heat3d: [0-9]+x' "stopped after the work had started"
}

# same A B WHAT: files A and B are byte-identical.
same() {
    if cmp -s "$1" "$2"; then ok; else bad "$3 differ ($1, $2)"; fi
}

grid=(-n 24 20 18)

# 1. The check against the exact discrete mode passes: 1, 2 and 3 ranks, 7pt and 27pt, float
#    and double, periodic, Dirichlet and mixed boundaries, other modes and fuse counts.
case_modes() {
    local i=0 c
    local passed='^Check: max error [0-9.e+-]+ against the exact discrete mode '
    passed+='\(tolerance [0-9.e+-]+\): passed$'
    for c in "1 -stencil 7pt -precision double -bc ppp" \
             "1 -stencil 27pt -precision float -bc ddd" \
             "1 -stencil 7pt -precision float -bc pdp -mode 2 1 1" \
             "2 -stencil 27pt -precision double -bc ppp -fuse 3" \
             "2 -stencil 7pt -precision float -bc ppd -exchange p2p" \
             "2 -stencil 27pt -precision double -bc dpd -mode 1 0 2" \
             "3 -stencil 7pt -precision double -bc d" \
             "3 -stencil 27pt -precision float -bc dpp -mode 3 1 1" \
             "3 -stencil 7pt -precision double -bc pdd -mode 0 2 1 -fuse 2" \
             "3 -stencil 27pt -precision double -bc p"; do
        i=$((i + 1))
        # shellcheck disable=SC2086
        run "mode$i" 0 $c "${grid[@]}" -steps 40 && has "mode$i" "$passed"
    done
    has mode1 '^Ranks: 1, the whole grid' && has mode1 '^Throughput: [0-9.e+-]+ GCell/s' && \
        has mode1 '^Plan: stencil 7pt' && has mode1 '^Mean: 0\.5 \(exact 0\.5\)'
    has mode9 "^Ranks: the plan's 3x1x1 process grid, a halo of 2 points \(fuse 2 x radius 1\)"
    # the halo's width: the plan's choice of steps per pass, which it times
    local halo="^Ranks: the plan's [0-9x]+ process grid, a halo of [0-9]+ points? "
    has mode5 "$halo\(fuse [0-9]+ x radius 1\) over p2p, "
}

# 2. Checkpoints and restarts: 40 steps on 2 ranks against 20 steps on 3 ranks, then 20 more
#    on 1 rank from the step-20 checkpoint: the step-40 files agree in every byte but the
#    writer's process grid and rank count (and the header checksum over them); a restart on 3
#    ranks with no -n (the file's grid) matches an uninterrupted run on 2 ranks.
case_restart() {
    local p=(-stencil 27pt -bc ppd -mode 2 1 1)
    run ckA 0 2 "${grid[@]}" "${p[@]}" -steps 40 -checkpoint-every 40 -checkpoint "$tmp/A" && \
        has ckA "^Checkpoint: $tmp/A\.40\.chk \(step 40"
    run ckB 0 3 "${grid[@]}" "${p[@]}" -steps 20 -checkpoint-every 20 -checkpoint "$tmp/B"
    run ckC 0 1 "${grid[@]}" "${p[@]}" -steps 40 -restart "$tmp/B.20.chk" -checkpoint "$tmp/C" \
        && has ckC "^Restart: $tmp/B\.20\.chk at step 20 \(written by 3 ranks, grid 3x1x1\)" && \
        has ckC '^Time: .* for 20 steps \(steps 20 to 40' && has ckC '^Check: .*: passed$'
    if [ -f "$tmp/A.40.chk" ] && [ -f "$tmp/C.40.chk" ] && [ ! -e "$tmp/C.40.chk.tmp" ]; then
        ok
    else
        bad "ckC: the step-40 checkpoints are missing (or a .tmp is left)"
        return 1
    fi
    tail -c +513 "$tmp/A.40.chk" > "$tmp/A.data"
    tail -c +513 "$tmp/C.40.chk" > "$tmp/C.data"
    same "$tmp/A.data" "$tmp/C.data" "ckC: the step-40 data of the two runs"
    head -c 88 "$tmp/A.40.chk" > "$tmp/A.head"
    head -c 88 "$tmp/C.40.chk" > "$tmp/C.head"
    same "$tmp/A.head" "$tmp/C.head" "ckC: the headers' grid, precision, stencil, step, bc, mode"
    for f in A C; do # the data checksum, bytes 104 to 111
        od -An -tx1 -j104 -N8 "$tmp/$f.40.chk" > "$tmp/$f.sum"
    done
    same "$tmp/A.sum" "$tmp/C.sum" "ckC: the data checksums"
    if [ "$(od -An -tu4 -j100 -N4 "$tmp/A.40.chk" | tr -d ' ')" = 2 ] && \
       [ "$(od -An -tu4 -j100 -N4 "$tmp/C.40.chk" | tr -d ' ')" = 1 ]; then ok; else
        bad "ckC: the writers' rank counts are not 2 and 1"
    fi
    run ckD 0 3 "${p[@]}" -steps 50 -restart "$tmp/C.40.chk" -checkpoint "$tmp/D" && \
        has ckD '^heat3d: 24x20x18 grid' && has ckD '^Check: .*: passed$'
    run ckE 0 2 "${grid[@]}" "${p[@]}" -steps 50 -checkpoint "$tmp/E" -quiet
    tail -c +513 "$tmp/D.50.chk" > "$tmp/D.data" 2>/dev/null
    tail -c +513 "$tmp/E.50.chk" > "$tmp/E.data" 2>/dev/null
    if [ -s "$tmp/D.data" ]; then
        same "$tmp/D.data" "$tmp/E.data" "ckD: the step-50 data after 1 -> 3 ranks"
    else
        bad "ckD: no step-50 checkpoint"
    fi
}

# 3. Refused checkpoints: a quick failure with the reason on stderr, on every rank, the file
#    unchanged and no checkpoint written; bad options: exit status 2 and the usage.
case_errors() {
    local good=$tmp/A.40.chk
    if [ ! -f "$good" ]; then
        bad "errors: no checkpoint to damage (case 2 failed)"
        return 1
    fi
    cp "$good" "$tmp/trunc.chk"
    truncate -s 1000 "$tmp/trunc.chk"
    cp "$good" "$tmp/corrupt.chk"
    printf 'ZZZZ' | dd of="$tmp/corrupt.chk" bs=1 seek=4000 conv=notrunc 2> /dev/null
    cp "$good" "$tmp/header.chk"
    printf 'Q' | dd of="$tmp/header.chk" bs=1 seek=200 conv=notrunc 2> /dev/null
    # the header's grid permuted (the same size), and an older format's version, each with the
    # header checksum made right again: the data checksum binds the grid
    python3 - "$good" "$tmp/perm.chk" "$tmp/v1.chk" <<'PY'
import struct, sys
def fnv1a(b):
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xffffffffffffffff
    return h
def craft(dst, edit):
    d = bytearray(open(sys.argv[1], 'rb').read())
    edit(d)
    d[504:512] = struct.pack('<Q', fnv1a(d[:504]))
    open(dst, 'wb').write(d)
craft(sys.argv[2], lambda d: struct.pack_into('<3q', d, 16,
                                              *reversed(struct.unpack_from('<3q', d, 16))))
craft(sys.argv[3], lambda d: struct.pack_into('<I', d, 8, 1))
PY
    md5sum "$good" "$tmp"/trunc.chk "$tmp"/corrupt.chk "$tmp"/header.chk "$tmp"/perm.chk \
        "$tmp"/v1.chk > "$tmp/md5.before"
    local p=(-stencil 27pt -bc ppd -mode 2 1 1 -steps 60 -checkpoint-every 10 -checkpoint
             "$tmp/Z")
    errs missing 2 1 "none\.chk: cannot open: No such file" "${p[@]}" -restart "$tmp/none.chk"
    errs trunc 2 1 'trunc\.chk: truncated: 1000 bytes, a 24x20x18 double checkpoint has 69632' \
        "${p[@]}" -restart "$tmp/trunc.chk"
    errs corrupt 3 1 'corrupt\.chk: checksum mismatch: corrupted data' "${p[@]}" \
        -restart "$tmp/corrupt.chk"
    errs permuted 2 1 'perm\.chk: checksum mismatch: corrupted data, or a header changed' \
        "${p[@]}" -restart "$tmp/perm.chk" && lacks permuted '^Restart:' "restarted from it"
    errs version1 1 1 'v1\.chk: checkpoint format version 1, this heat3d reads version 2 only' \
        "${p[@]}" -restart "$tmp/v1.chk"
    errs header 2 1 'header\.chk: header checksum mismatch' "${p[@]}" -restart "$tmp/header.chk"
    errs size 2 1 'A\.40\.chk: checkpoint of a 24x20x18 grid, this run is 20x20x18' \
        -n 20 20 18 "${p[@]}" -restart "$good"
    errs precision 2 1 'A\.40\.chk: checkpoint in double precision, this run is float' \
        -precision float "${p[@]}" -restart "$good"
    errs stencil 1 1 'A\.40\.chk: checkpoint of the 27pt stencil, this run uses 7pt' \
        "${p[@]}" -stencil 7pt -restart "$good"
    if md5sum -c --quiet "$tmp/md5.before"; then ok; else bad "errors: a checkpoint changed"; fi
    if ls "$tmp"/Z.* > /dev/null 2>&1; then bad "errors: a refused restart wrote a file"; else
        ok; fi
    errs steps 2 2 '-steps -1: expected 0\.\.9007199254740992' -steps -1 && terse steps
    errs shape 3 2 '-stencil 9pt: expected 7pt or 27pt' -stencil 9pt
    errs bc 2 2 '-bc xyz: expected p \(periodic\) or d \(Dirichlet\)' -bc xyz
    errs unknown 2 2 "unknown option '-bogus'" -bogus
    errs exchange 2 2 '-exchange mpi: expected auto, p2p, nccl or cuda-mpi' -exchange mpi
    errs exchange_cpu 2 1 'exchange cuda-mpi moves GPU data; this plan runs on the CPU' \
        -backend cpu -exchange cuda-mpi
    errs zeromode 2 2 '-mode: k = 0 along Dirichlet dimension y is zero on all 20 points' \
        "${grid[@]}" -bc pdp -mode 1 0 1
}

# 4. Option values out of range: exit status 2 and the valid range, before any work.
case_ranges() {
    errs fuse 1 2 '-fuse 2147483647: expected 0\.\.1024' -fuse 2147483647
    local b
    for b in inf 1e300 nan -1; do
        errs "budget$b" 1 2 "-budget $b: expected a number above 0, at most 1e\+06" -budget "$b"
    done
    errs stepsbig 1 2 '-steps 9007199254740993: expected 0\.\.9007199254740992' \
        -steps 9007199254740993
    errs nbig 1 2 '-n 16 16 99999999999999999999: expected 3 whole numbers, each 3\.\.1073741824' \
        -n 16 16 99999999999999999999
    errs njunk 1 2 '-n 16 16 16x: expected 3 whole numbers' -n 16 16 16x
    errs npoints 1 2 '-n 1073741824 1073741824 1073741824: more than 2\^62 points' \
        -n 1073741824 1073741824 1073741824
    errs every 1 2 '-checkpoint-every 0: expected 1\.\.9007199254740992' -checkpoint-every 0
}

# 5. Results that cannot be written to stdout (a full disk): exit status 1 and the reason.
#    Under mpiexec the ranks write through it, and it drops such errors: one process alone (an
#    MPI singleton) shows them.
case_stdout() {
    timeout -k 10 60 "$heat3d" --help > /dev/null 2>&1 || return 0
    timeout -k 10 60 "$heat3d" -n 8 8 8 -steps 2 > /dev/full 2> "$tmp/stdout.err"
    local rc=$?
    local want='^heat3d: cannot write the standard output: No space left on device'
    if [ "$rc" -eq 1 ] && grep -q "$want" "$tmp/stdout.err"; then
        ok
    else
        bad "stdout: exit status $rc writing to /dev/full, expected 1 and the reason"
    fi
}

# 6. Outputs that cannot be written: a bad place found before any work, with the system's
#    reason; a file failing on rank 0 during the run stops every rank together (status 1,
#    quickly); an unfinished checkpoint of a killed run removed at the start.
case_outputs() {
    local np
    for np in 1 3; do
        errs "cknodir$np" "$np" 1 \
            '-checkpoint: cannot create files /nonexistent/x\.\*: No such file or directory' \
            "${grid[@]}" -steps 10 -checkpoint /nonexistent/x && before "cknodir$np"
    done
    mkdir -p "$tmp/R.10.chk" # rank 0's rename into place fails
    errs ckrename 3 1 'R\.10\.chk\.tmp: cannot rename to .*/R\.10\.chk: Is a directory' \
        "${grid[@]}" -steps 20 -checkpoint-every 10 -checkpoint "$tmp/R"
    if [ -e "$tmp/R.10.chk.tmp" ] || [ -e "$tmp/R.20.chk" ]; then
        bad "ckrename: a temporary file left, or steps run past the failure"
    else
        ok
    fi
    printf 'partial' > "$tmp/S.20.chk.tmp"
    touch "$tmp/S.x.chk.tmp" "$tmp/Sx.20.chk.tmp"
    run stale 0 2 "${grid[@]}" -steps 10 -checkpoint "$tmp/S" -quiet && \
        has stale "removed .*/S\.20\.chk\.tmp, a checkpoint an interrupted run left unfinished"
    if [ ! -e "$tmp/S.20.chk.tmp" ] && [ -e "$tmp/S.x.chk.tmp" ] && [ -e "$tmp/Sx.20.chk.tmp" ] \
       && [ -f "$tmp/S.10.chk" ]; then
        ok
    else
        bad "stale: the unfinished checkpoint kept, another file removed, or no checkpoint"
    fi
}

# 7. Images (heat3d with libpng): PREFIX.STEP.png every 20 steps from step 0, PNG files of
#    some size; a bad place found before any work; rank 0 failing to create an image stops
#    every rank together.
case_png() {
    run png 0 2 "${grid[@]}" -steps 40 -png-every 20 -png "$tmp/img" && \
        has png "^Image: $tmp/img\.20\.png \(step 20, slice z = 9"
    run pngx 0 3 "${grid[@]}" -bc dpd -steps 10 -png "$tmp/sx" -png-slice x 5 -quiet
    local f
    for f in img.0 img.20 img.40 sx.10; do
        if [ -f "$tmp/$f.png" ] && [ "$(stat -c %s "$tmp/$f.png")" -gt 100 ] && \
           [ "$(head -c 8 "$tmp/$f.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
            ok
        else
            bad "png: $f.png missing, too small or without the PNG signature"
        fi
    done
    local np
    for np in 1 2; do
        errs "pngnodir$np" "$np" 1 \
            '-png: cannot create files /nonexistent/p\.\*: No such file or directory' \
            "${grid[@]}" -steps 10 -png-every 5 -png /nonexistent/p && before "pngnodir$np"
    done
    mkdir -p "$tmp/pd/q.5.png" # a directory has the step-5 image's name
    errs pngfail 2 1 'cannot create .*/q\.5\.png: Is a directory' "${grid[@]}" -steps 10 \
        -png-every 5 -png "$tmp/pd/q"
    if [ -f "$tmp/pd/q.0.png" ] && [ ! -e "$tmp/pd/q.10.png" ]; then ok; else
        bad "pngfail: no step-0 image, or steps run past the failure"
    fi
}

# 8. Progress to a file: plain lines every -progress S seconds, no carriage returns.
case_progress() {
    timeout -k 10 60 "$mpiexec" -n 2 "$heat3d" "${grid[@]}" -steps 400 -progress 0.001 \
        > "$tmp/prog.out" 2> "$tmp/prog.err"
    local rc=$? lines
    lines=$(grep -Ec '^heat3d: step [0-9]+/400 \([0-9]+%\), [0-9.e+-]+ s, [0-9.e+-]+ GCell/s, about [0-9.e+-]+ s left, error ' \
            "$tmp/prog.err")
    if [ "$rc" -eq 0 ] && [ "$lines" -ge 2 ] && ! grep -q $'\r' "$tmp/prog.err"; then ok; else
        bad "progress: status $rc, $lines plain step lines (expected 2 or more, no \\r)"
        sed 's/^/    /' "$tmp/prog.err" | head -10
    fi
}

if [ "$part" = png ]; then
    run pnghelp 0 1 --help || exit 1
    if ! grep -q 'PNG images available' "$tmp/pnghelp.out"; then
        echo "SKIP: heat3d was built without libpng: no PNG images to check"
        exit 77
    fi
    case_png
else
    case_modes
    case_restart
    case_errors
    case_ranges
    case_stdout
    case_outputs
    case_progress
fi

echo "test_heat3d: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
