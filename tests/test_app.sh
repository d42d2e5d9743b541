#!/usr/bin/env bash
# test_app.sh TIDE MPIEXEC: the `tide` command as a user meets it: a verified run, its keys,
# JSON output, bad arguments and values out of range failing fast (non-zero exit, a usage
# message) on every rank, and outputs that cannot be written found before the work or failing
# on every rank alike.
set -u
tide=$1
mpiexec=$2
. "$(dirname "$0")/checks.sh"

run() { run_prog "$tide" "$@"; }

# refuse NAME NP STATUS PATTERN ARGS...: tide must fail quickly (checks.sh: refuse_prog).
refuse() { refuse_prog "$tide" "$@"; }

# errs NAME NP PATTERN ARGS...: a run that must fail quickly with PATTERN on stderr.
errs() {
    local name=$1 np=$2 pat=$3
    shift 3
    refuse "$name" "$np" nonzero "$pat" "$@"
}

# schema NAME FILE COMMAND: the -json FILE of `tide COMMAND` has exactly the members
# docs/api.md lists (tests/test_docs.py json).
schema() {
    if python3 "$(dirname "$0")/test_docs.py" json "$2" "$3"; then ok; else
        bad "$1: $2 does not match docs/api.md's JSON members of tide $3"; fi
}

# before NAME: the failed run NAME stopped before the work (no first line, no timing).
before() {
    if grep -Eq '^(Tide |Time per run)' "$tmp/$1.out"; then
        bad "$1: stopped after the work had started"
    else
        ok
    fi
}

run version 0 1 --version && has version '^tide [0-9]+\.[0-9]+\.[0-9]+$'
run help 0 1 --help && has help 'usage: mpirun -np P tide'
run ffthelp 0 1 fft --help && has ffthelp '-transposed'
run info 0 2 info && has info '^rank 1: host' && has info '^BLAS: '
# Whether one rank gets the CUDA backend: a GPU run beside each CPU one below.
run info1 0 1 info
cuda=0
grep -q 'backend cuda' "$tmp/info1.out" && cuda=1
run infomeasure 0 2 info --measure && has infomeasure 'rates \(GB/s\): host copy [0-9]' && \
    has infomeasure '^Aggregate rates' && has infomeasure '^Exchange rate .*: [0-9]+\.[0-9]+$'

# -measure on several ranks with the exchange and the chunks left to Tide: every exchange the
# plan can use is timed, then the chunk counts on it; the info log lists them, the one kept is
# the rule's (the first) unless another is faster by more than 2%, then the fastest, and Plan:
# names it.
t='[0-9.e+-]+ ms'
# kept_right WHAT LINE: the variant LINE keeps follows that rule (times printed to 4 digits).
kept_right() {
    echo "$2" | awk -v what="$1" '{
        sub(/.*fft plan: /, ""); sub("^" what " ", "")
        kept = $0; sub(/.*; /, "", kept); sub(/ kept\)$/, "", kept)
        sub(/ \(a forward.*/, ""); n = split($0, v, ", ")
        for (i = 1; i <= n; i++) { split(v[i], f, " "); name[i] = f[1]; time[i] = f[2] + 0 }
        best = 1
        for (i = 2; i <= n; i++) if (time[i] < time[best]) best = i
        want = time[best] < 0.981 * time[1] ? name[best] : name[1]
        alt = time[best] < 0.979 * time[1] ? name[best] : name[1]
        exit !(kept == want || kept == alt)
    }'
}
if TIDE_LOG=info run measurex 0 3 fft c2c cpu double 12 10 9 -measure -n 1 &&
    has measurex "exchange auto $t, a2av $t, p2p $t \(a forward and backward pair, measured; " &&
    has measurex "exchange chunks none $t, x2 $t, x4 $t, x8 $t, x16 $t \(a forward and "; then
    line=$(grep -E 'info\] fft plan: exchange (auto|a2av|p2p) ' "$tmp/measurex.out")
    kept=$(echo "$line" | sed -E 's/.*; ([a-z0-9]+) kept\)$/\1/')
    planx=$(sed -nE 's/^Plan: .*exchange ([a-z0-9-]+),.*/\1/p' "$tmp/measurex.out")
    if kept_right exchange "$line" && { [ "$kept" = auto ] || [ "$planx" = "$kept" ]; }; then
        ok
    else
        bad "measurex: kept $kept (Plan: exchange $planx) against the rule: $line"
    fi
    line=$(grep -E 'info\] fft plan: exchange chunks ' "$tmp/measurex.out")
    kept=$(echo "$line" | sed -E 's/.*; ([a-z0-9]+) kept\)$/\1/')
    plan=$(grep '^Plan: ' "$tmp/measurex.out")
    if kept_right 'exchange chunks' "$line" &&
        if [ "$kept" = none ]; then ! echo "$plan" | grep -Eq ' x[0-9]+ '; else
            echo "$plan" | grep -Eq "\+[a-z0-9]+ $kept |[a-z0-9]+\+fft[^ ]* $kept "; fi; then
        ok
    else
        bad "measurex: kept $kept chunks ($plan) against the rule: $line"
    fi
fi

# Threads within the rank's binding (Open MPI's --bind-to): bound to one core, one thread, and
# where the node has more cores than that, rank 0 says so; unbound, no such warning.
if timeout -k 10 60 "$mpiexec" --version 2>&1 | grep -q 'Open MPI'; then
    for b in core none; do
        if timeout -k 10 30 "$mpiexec" --bind-to $b -n 1 "$tide" info > "$tmp/bind$b.out" 2>&1; then
            ok
        else
            bad "bind$b: tide info under --bind-to $b failed"
        fi
    done
    has bindcore '^rank 0: .* 1 threads,'
    free=$(sed -n 's/^rank 0: .* \([0-9]*\) threads,.*/\1/p' "$tmp/bindnone.out")
    if [ "${free:-1}" -gt 1 ]; then
        has bindcore 'warn\] a rank is bound to 1 core, fewer than its share of the node'
    fi
    if grep -q 'a rank is bound to' "$tmp/bindnone.out"; then
        bad "bindnone: the binding warning on an unbound rank"
    else
        ok
    fi
fi

# A verified run with every key heFFTe's parsers read.
run c2c 0 4 fft c2c auto double 24 20 18 -n 2
for key in '^Time per run: [0-9.e-]+ \(s\)' '^Performance: ' '^Memory usage: ' '^Max error: ' \
           '^Min/Max/Avg: ' '^Verification: passed' 'serial FFTW of the gathered array'; do
    has c2c "$key"
done

run r2cjson 0 3 fft r2c cpu float 17 12 10 -pencils -p2p -batch 2 -json "$tmp/r.json" -n 2
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); c = d["cost"]
sys.exit(not (d["verified"] is True and d["size"] == [17, 12, 10] and d["location"] == "host"
              and c["exchanges"] == 2 and c["exchange_bytes"] > 0 and c["fft_passes"] == 3
              and d["rates"]["d2d"] is None))' "$tmp/r.json" 2>/dev/null; then
    ok
else
    bad "r2cjson: JSON file missing or not verified"
fi
schema r2cjson "$tmp/r.json" fft
run grids 0 4 fft c2c cpu double 12 10 9 -ingrid 2x2x1 -outgrid 1x1x4 -inplace -n 1 && \
    has grids '^Verification: passed'

# Bad input: non-zero exit, a message, on every rank, quickly.
run unknown 2 3 fft c2c cpu double 8 8 8 -bogus && has unknown "unknown option '-bogus'" && \
    terse unknown
run zero 2 3 fft c2c cpu double 8 0 8 && has zero 'NY 0: expected 1\.\.1073741824' && terse zero
run short 2 2 fft c2c cpu double 8 8 && terse short && \
    has short 'missing NZ \(expected <c2c\|r2c> <auto\|cpu\|cuda> <float\|double> NX NY NZ\)'
run type 2 2 fft c2x cpu double 8 8 8 && has type 'type c2x: expected c2c or r2c'
run grid 2 4 fft c2c cpu double 8 8 8 -ingrid 3x1x1 && has grid '-ingrid 3x1x1 has 3 ranks, the run has 4'
run novalue 2 2 fft c2c cpu double 8 8 8 -n && has novalue '-n needs a value: expected 1\.\.1000000'
run command 2 2 frobnicate && has command "unknown command 'frobnicate'"
run infoarg 2 2 info --bogus && has infoarg "unknown option '--bogus'"
# Backend cuda: a clear error where there is no GPU (CI), a verified GPU run where there is.
if [ "$cuda" = 1 ]; then
    run cuda 0 2 fft c2c cuda double 8 8 8 && has cuda 'Verification: passed'
    run cudadev 0 2 fft r2c cuda float 9 8 10 -device && has cudadev 'Verification: passed'
    run pcuda 0 2 poisson cuda double 16 12 10 -n 2 && has pcuda 'Verification: passed'
    run pcudadev 0 2 poisson cuda float 16 12 10 -device -batch 2 -n 2 && \
        has pcudadev 'Verification: passed'
    run pcudabc 0 2 poisson cuda double 16 12 10 -bc ppn -device -n 2 && \
        has pcudabc 'Verification: passed'
    # two and three bounded dimensions: cosine and sine transforms on the GPU
    run pcudabc2 0 2 poisson cuda double 16 12 10 -bc pnd -device -n 1 && \
        has pcudabc2 'Verification: passed'
    run pautobc3 0 2 poisson auto float 12 10 8 -bc ndnnnd -n 1 && \
        has pautobc3 'Verification: passed' && has pautobc3 '^Plan: r2r'
else
    # the machine lacks what the run needs: exit status 1 (a failed run), not 2
    run cuda 1 2 fft c2c cuda double 8 8 8 && has cuda '(cuda|CUDA)'
    run cudadev 1 2 fft c2c cpu double 8 8 8 -device && has cudadev 'device'
    run pcuda 1 2 poisson cuda double 8 8 8 && has pcuda '(cuda|CUDA)'
    run pcudadev 1 1 poisson cpu double 8 8 8 -device && has pcudadev 'device'
fi

# `tide poisson`: a manufactured periodic problem checked against the exact solution and by the
# residual of the discrete equation (a naive 7-point loop on the gathered array).
run phelp 0 1 poisson --help && has phelp '-alpha A' && has phelp '-bc XYZ'
for np in 1 3; do
    run "pd$np" 0 "$np" poisson cpu double 16 12 10 -n 2
    for key in '^Time per run: [0-9.e-]+ \(s\)' '^Performance: ' '^Memory usage: ' '^Max error: ' \
               '^Min/Max/Avg: ' '^Residual: relative L2 ' '^Mean of f: ' \
               '^Bound: .*bound / time [0-9.]+$' '^Verification: passed'; do
        has "pd$np" "$key"
    done
    run "pf$np" 0 "$np" poisson cpu float 16 12 10 -n 2 && has "pf$np" '^Verification: passed'
    run "ph$np" 0 "$np" poisson cpu double 16 12 10 -alpha 2 -batch 2 -inplace -n 2 && \
        has "ph$np" '^Verification: passed' && has "ph$np" 'batch 2, in place'
done
run pgrid 0 3 poisson cpu double 16 12 10 -grid 1x3x1 -n 2 && has pgrid '^Verification: passed'
# A fine spacing along x (h = 1/2048): in float a right solve's residual (about 4e-3 here) is
# above the fixed bar of 1e-3, below the rounding floor the check takes there (0.086).
run pfine 0 2 poisson cpu float 2048 8 6 -n 1 && has pfine '^Verification: passed' && \
    has pfine 'residual relative L2 [0-9.e-]+, tolerance 0\.0[1-9]'
run pspec 0 3 poisson cpu double 17 12 10 -spectral -pencils -p2p -h 0.1 0.2 0.3 -n 1 && \
    has pspec '^Verification: passed' && has pspec '^Residual: not computed'
# one bounded dimension: 2D transforms and a tridiagonal solve per mode
run pbcz 0 3 poisson cpu double 16 12 10 -bc ppn -n 1 && has pbcz '^Verification: passed'
run pbcx 0 2 poisson cpu float 15 12 10 -bc dpp -n 1 && has pbcx '^Verification: passed'
# two and three bounded: cosine and sine transforms along all but the line (the last bounded
# one, or the stretched one), exact with -spectral along those
run pbc2 0 3 poisson cpu double 16 12 10 -bc ndp -pencils -n 1 && \
    has pbc2 '^Verification: passed' && has pbc2 '^Plan: fft\(z\) > .*r2r\(x\) > .*tridiag\(y\)'
run pbc3 0 4 poisson cpu float 13 12 11 -bc ddnndn -stretch 1.5 -batch 2 -n 1 && \
    has pbc3 '^Verification: passed' && has pbc3 'tridiag\(z\)'
run pbc3s 0 2 poisson cpu double 16 12 10 -bc nnn -spectral -alpha 1 -n 1 && \
    has pbc3s '^Verification: passed'
run pjson 0 3 poisson cpu float 16 12 10 -alpha 0.5 -json "$tmp/p.json" -n 2
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(not (d["verified"] is True and d["size"] == [16, 12, 10] and d["alpha"] == 0.5
              and d["cost"]["exchanges"] == 2 and d["bound_seconds"] > 0
              and d["rates"]["host_copy"] > 0))' \
        "$tmp/p.json" 2>/dev/null; then
    ok
else
    bad "pjson: JSON file missing, not parsable or not verified"
fi
schema pjson "$tmp/p.json" poisson

errs palpha 3 'option alpha = -1 is not valid' poisson cpu double 8 8 8 -alpha -1
errs pbcletter 2 '-bc pxp: expected XYZ or XxYyZz' poisson cpu double 8 8 8 -bc pxp
errs punknown 3 "unknown option '-bogus'" poisson cpu double 8 8 8 -bogus && \
    has_err punknown "^Try 'tide poisson --help'\.$"
errs pgridbad 2 'has 3 ranks, the run has 2' poisson cpu double 8 8 8 -grid 1x3x1
errs pshort 2 'missing NZ' poisson cpu double 8 8

# The example an MPI code can copy (apps/poisson3d.c), built beside tide.
p3d="$(dirname "$tide")/poisson3d"
if timeout -k 10 30 "$mpiexec" -n 2 "$p3d" > "$tmp/p3d.out" 2>&1 && \
        grep -q '^poisson3d: 2 ranks,.*max |u| 1\.0' "$tmp/p3d.out"; then
    ok
else
    bad "poisson3d: the example failed on 2 ranks ($p3d)"
    sed 's/^/    /' "$tmp/p3d.out" | head -20
fi

# `tide stencil`: explicit time steps, checked bitwise against the naive oracle
# (tide_ref_stencil) up to 2^21 points, against a one-step (fuse 1) plan above; one rank only.
run shelp 0 1 stencil --help && has shelp '-shape SHAPE' && has shelp 'star:R' && \
    has shelp '-bc XYZ' && has shelp '-no-check'
has help '^  stencil '
run sd 0 1 stencil cpu double 17 19 23 -steps 7 -fuse 3 -bc pdp -n 2
for key in '^Time per run: [0-9.e-]+ \(s\)' '^Performance: ' '^Memory usage: ' '^Max error: 0$' \
           '^Min/Max/Avg: ' '^Plan: .*fuse 3 steps per pass' '^Memory: u ' \
           '^Reference: the naive oracle .*: 0 of 7429 points differ$' \
           '^Throughput: [0-9.e+-]+ GCell/s' '^Bound: .*bound / time [0-9.]+$' \
           '^Roofline: bound .*figure / fused bound [0-9.e+-]+$' '^Verification: passed'; do
    has sd "$key"
done
run sf27 0 1 stencil cpu float 12 11 10 -shape 27pt -steps 5 -bc ddp -n 1 && \
    has sf27 '^Stencil: 27 taps' && has sf27 '^Verification: passed'
run sstar 0 1 stencil cpu double 13 12 11 -shape star:2 -bc ppd -steps 4 -n 1 && \
    has sstar '^Stencil: 13 taps, radius 2' && has sstar '^Verification: passed'
# star:3 with rows of a prime length wide enough for the CPU's star span's blocks of vectors
run sstar3 0 1 stencil cpu float 23 19 97 -shape star:3 -bc dpd -steps 5 -fuse 3 -n 1 && \
    has sstar3 '^Stencil: 19 taps, radius 3' && has sstar3 '^Verification: passed'
run sbox 0 1 stencil auto float 11 10 9 -shape box:2 -bc dpd -steps 3 -fuse 2 -n 1 && \
    has sbox '^Stencil: 125 taps, radius 2' && has sbox '^Verification: passed'
run ssrc 0 1 stencil cpu double 16 12 10 -bc ppp -source -steps 6 -n 1 && \
    has ssrc 'with a source' && has ssrc '^Verification: passed'
# above 2^21 points: the one-step plan is the reference
run sbig 0 1 stencil cpu float 129 128 128 -steps 2 -n 1 && \
    has sbig '^Reference: a second plan with fuse 1' && has sbig '^Verification: passed'
run snocheck 0 1 stencil cpu float 9 9 9 -steps 0 -no-check -n 1 && \
    has snocheck '^Verification: skipped'
run sjson 0 1 stencil cpu float 10 9 8 -shape star:1 -steps 3 -json "$tmp/s.json" -n 2
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(not (d["verified"] is True and d["command"] == "stencil" and d["size"] == [10, 9, 8]
              and d["steps"] == 3 and d["taps"] == 7 and d["differing_points"] == 0
              and d["check"] == "oracle" and d["gcells"] > 0 and d["bound_gcells"] > 0))' \
        "$tmp/s.json" 2>/dev/null; then
    ok
else
    bad "sjson: JSON file missing, not parsable or not verified"
fi
schema sjson "$tmp/s.json" stencil
errs sradius 1 '-shape star:5: expected 7pt, 27pt, star:R or box:R with R 1\.\.4' stencil cpu double 16 16 16 \
    -shape star:5
errs sradius0 1 '-shape box:0: expected 7pt, 27pt, star:R or box:R with R 1\.\.4' stencil cpu double 16 16 16 \
    -shape box:0
errs sshape 1 "-shape hex: expected 7pt" stencil cpu double 16 16 16 -shape hex
errs ssmall 2 'too small for radius 2: .*\(x has 4\)' stencil cpu double 4 16 16 -shape box:2
errs sbc 2 "-bc pnp: expected XYZ, one letter per dimension, p \(periodic\) or d \(Dirichlet\)" \
    stencil cpu double 8 8 8 -bc pnp
errs ssteps 1 '-steps -1: expected 0\.\.2147483647' stencil cpu double 8 8 8 -steps -1
# Several ranks: each holds a block of the plan's process grid, a halo of fuse r points is
# exchanged before each pass, and each rank checks its block bitwise (the oracle on the whole
# grid, or above 2^21 points a one-step plan on the same blocks); a block too thin for its
# halo is refused on every rank.
run sdist 0 3 stencil cpu double 21 17 13 -bc pdp -steps 7 -fuse 2 -source \
    -json "$tmp/sd.json" -n 1 && \
    has sdist "^Ranks: the plan's 3x1x1 process grid" && has sdist 'halo 2 > sweep\[2 steps\]' \
    && has sdist 'compared bitwise \(each rank its block\): 0 of 4641 points differ' && \
    has sdist '^Verification: passed' && has sdist '^Halo: 5 exchanges per run, [0-9.e-]+ s'
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(not (d["verified"] is True and d["ranks"] == 3 and d["grid"] == [3, 1, 1]
              and d["halo_points_max"] > 0 and d["fuse"] == 2 and d["exchanges"] == 5
              and d["exchange_rate_gbps"] > 0))' "$tmp/sd.json" 2>/dev/null; then
    ok
else
    bad "sdist: JSON file missing, not parsable, not verified or without grid and halo"
fi
schema sdist "$tmp/sd.json" stencil
run sdist2 0 2 stencil cpu float 130 130 128 -shape star:2 -bc ppd -steps 3 -n 1 && \
    has sdist2 '^Reference: a second plan with fuse 1' && has sdist2 '^Verification: passed'
# -grid: the caller's process grid; -overlap 1: split passes on the CPU too (the inner box
# swept between the halo's posts and its wait), the same bits
run sgrid 0 4 stencil cpu float 40 36 34 -shape 27pt -bc pdp -steps 7 -fuse 2 -grid 2x2x1 \
    -overlap 1 -n 1 && has sgrid '^Ranks: the 2x2x1 process grid' && \
    has sgrid 'halo 2 beside sweep\[2 steps\]' && has sgrid '^Verification: passed' && \
    has sgrid '^Halo: 4 exchanges per run beside the sweeps of the points that need no halo'
run snogrid 0 4 stencil cpu float 40 36 34 -bc pdp -steps 7 -fuse 2 -grid 1x2x2 \
    -overlap -1 -n 1 && has snogrid 'halo 2 > sweep\[2 steps\]' && \
    has snogrid '^Verification: passed'
errs sgridp 4 '-grid 2x2x2 has 8 ranks, the run has 4' stencil cpu float 40 36 34 -grid 2x2x2
errs sgridv 1 "-grid 2x2: expected AxBxC, each factor 1\.\.2147483647" stencil cpu float 40 36 34 -grid 2x2
errs sover 1 '-overlap 2: expected -1\.\.1' stencil cpu float 40 36 34 -overlap 2
errs sthin 5 'is 3 points along dimension 0, fewer than the 5 a sweep needs' \
    stencil cpu double 5 5 5 -shape star:2 -fuse 1
if [ "$cuda" = 1 ]; then
    run scuda 0 1 stencil cuda double 33 31 29 -steps 9 -bc pdp -n 2 && \
        has scuda '^Verification: passed' && has scuda 'backend cuda'
    run scudadev 0 1 stencil cuda float 40 36 34 -shape box:2 -device -source \
        -bc ppp -steps 8 -n 2 && has scudadev '^Verification: passed'
    run scuda27 0 1 stencil cuda double 30 20 40 -shape 27pt -device -fuse 3 -steps 10 -n 2 && \
        has scuda27 '^Verification: passed' && has scuda27 'fuse 3 steps per pass'
    run scudabig 0 1 stencil cuda float 160 130 128 -shape star:3 -device -steps 8 -n 2 && \
        has scudabig '^Reference: a second plan with fuse 1' && has scudabig '^Verification: passed'
    # several ranks sharing the GPU: halos packed on the device, staged through host memory
    run scuda2 0 2 stencil cuda double 33 31 29 -steps 9 -bc pdp -n 2 && \
        has scuda2 '^Verification: passed' && has scuda2 '^Halo: '
    run scuda3dev 0 3 stencil cuda float 40 36 34 -shape box:2 -device -source \
        -bc ppd -steps 7 -n 1 && has scuda3dev '^Verification: passed'
else
    run scuda nonzero 1 stencil cuda double 8 8 8 && has scuda '(cuda|CUDA)'
    run scudadev 1 1 stencil cpu double 8 8 8 -device && has scudadev 'device'
fi

# `tide band`: x <- A^S x for a band matrix, checked bitwise against the naive oracle
# (tide_ref_band) on the whole matrix; on one rank and on several (a halo per pass).
run bhelp 0 1 band --help && has bhelp '-kl KL' && has bhelp '-ku KU' && has bhelp '-fuse K'
has help '^  band '
run bd 0 1 band cpu double 1009 -kl 5 -ku 7 -steps 13 -fuse 4 -n 2
for key in '^Time per run: [0-9.e-]+ \(s\)' '^Performance: ' '^Memory usage: ' \
           '^Min/Max/Avg: ' '^Plan: band kl 5 ku 7 double cpu: band\[4 steps\]' \
           '^Reference: the naive oracle .*: 0 of 1009 rows differ$' \
           '^Bandwidth: [0-9.e+-]+ GB/s' '^Bound: .*bound / time [0-9.]+$' '^Verification: passed'; do
    has bd "$key"
done
run bdist 0 3 band cpu float 997 -kl 64 -ku 2 -steps 7 -fuse 3 -n 1 && \
    has bdist 'halo 192\+6 > band\[3 steps\]' && has bdist '^Halo: 3 exchanges per run' && \
    has bdist '^Verification: passed'
run bzero 0 4 band cpu double 3 -kl 0 -ku 0 -steps 5 -n 1 && has bzero '^Verification: passed'
run bjson 0 2 band cpu double 211 -kl 3 -ku 1 -steps 6 -json "$tmp/b.json" -n 1
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(not (d["verified"] is True and d["command"] == "band" and d["size"] == [211, 1, 1]
              and d["kl"] == 3 and d["ku"] == 1 and d["differing_rows"] == 0
              and d["exchanges"] == 1 and d["check"] == "oracle" and d["gbps"] > 0))' \
        "$tmp/b.json" 2>/dev/null; then
    ok
else
    bad "bjson: JSON file missing, not parsable or not verified"
fi
schema bjson "$tmp/b.json" band
run bnocheck 0 1 band cpu float 100 -steps 0 -no-check -n 1 && \
    has bnocheck '^Verification: skipped'
errs bkl 1 '-kl 65: expected 0\.\.64' band cpu double 100 -kl 65
errs bsteps 1 '-steps -1: expected 0\.\.2147483647' band cpu double 100 -steps -1
if [ "$cuda" = 1 ]; then
    run bcuda 0 1 band cuda double 100003 -kl 64 -ku 64 -steps 9 -n 2 && \
        has bcuda '^Verification: passed' && has bcuda 'backend cuda'
    run bcudadev 0 2 band cuda float 5003 -kl 3 -ku 17 -device -fuse 5 -steps 11 -n 2 && \
        has bcudadev '^Verification: passed' && has bcudadev '^Halo: '
    errs bcudafuse 1 'fits at most' band cuda double 1000 -kl 64 -ku 64 -fuse 1000
    run bcudaooc 0 1 band cuda double 300007 -kl 64 -ku 5 -budget 0.02 -steps 9 -n 1 && \
        has bcudaooc '^Out of card: [0-9]+ slabs' && has bcudaooc '^Verification: passed'
else
    run bcuda nonzero 1 band cuda double 100 && has bcuda '(cuda|CUDA)'
fi

# `tide gemm`: C = alpha op(A) op(B) + beta C checked against the naive oracle (tide_ref_gemm),
# each entry's error in units of a rigorous rounding bound; every entry up to M N K = 2^27,
# 4 rows and 4 columns above; on one rank, and on several (2D blocks, SUMMA), where each rank
# checks the entries of its block of C.
run ghelp 0 1 gemm --help && has ghelp '-ta N\|T\|C' && has ghelp '-order col\|row' && \
    has ghelp '-pageable' && has ghelp '-share-a auto\|on\|off' && has ghelp '-complex'
has help '^  gemm '
run gd 0 1 gemm cpu double 300 200 100 -beta 0.5 -n 2
for key in '^Time per run: [0-9.e-]+ \(s\)' '^Performance: ' '^Memory usage: ' \
           '^Max error: [0-9.e-]+ ' '^Min/Max/Avg: ' '^Plan: gemm 300x200x100' \
           '^Rate: [0-9.e+-]+ TFLOP/s' '^Reference: .*, full: 60000 of 60000 entries' \
           '^Bound: ' '^Verification: passed' '^BLAS: '; do
    has gd "$key"
done
run gf 0 1 gemm cpu float 97 61 53 -ta T -tb T -order row -alpha -1.5 -beta 2 -pageable \
    -share-a on -n 1 && has gf 'op TT, row major' && has gf 'pageable host matrices' && \
    has gf '^Verification: passed'
# above 2^27 multiply-adds: the sampled rows and columns
run gbig 0 1 gemm auto float 600 520 440 -n 1 && \
    has gbig '^Reference: .*, sampled: 4464 of 312000 entries' && has gbig '^Verification: passed'
# one size: M = N = K
run gjson 0 1 gemm cpu double 23 -ta T -tb t -beta 1 -json "$tmp/g.json" -n 2
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(not (d["verified"] is True and d["command"] == "gemm" and d["size"] == [23, 23, 23]
              and d["transb"] == "T" and d["beta"] == 1 and d["check"] == "full"
              and d["checked_entries"] == 529 and d["max_error"] <= 1 and d["gflops"] > 0))' \
        "$tmp/g.json" 2>/dev/null; then
    ok
else
    bad "gjson: JSON file missing, not parsable or not verified"
fi
# complex elements (ZGEMM): the conjugate transpose, complex alpha and beta, 8 M N K flops
run gz 0 1 gemm cpu double 41 37 29 -complex -ta C -tb T -alpha 0.5,-1 -beta 1,0.25 \
    -json "$tmp/gz.json" -n 2 && \
    has gz '^Tide .*: gemm complex double 41x37x29 .*op CT, .*alpha 0.5-1i, beta 1\+0.25i' && \
    has gz '^Plan: gemm 41x37x29 complex double CT col cpu host' && \
    has gz '^Rate: [0-9.e+-]+ TFLOP/s \(8 M N K' && \
    has gz '^Reference: .*, full: 1517 of 1517 entries' && has gz '^Verification: passed'
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(not (d["verified"] is True and d["domain"] == "complex" and d["transa"] == "C"
              and d["alpha_im"] == -1 and d["beta_im"] == 0.25 and d["checked_entries"] == 1517
              and abs(d["gflops"] * 1e9 * d["time_per_run"] / (8 * 41 * 37 * 29) - 1) < 1e-3))' \
        "$tmp/gz.json" 2>/dev/null; then
    ok
else
    bad "gz: JSON file missing, not parsable, not verified or not complex (8 M N K flops)"
fi
schema gz "$tmp/gz.json" gemm
# Bad input fails fast (each failing launch costs mpirun about 2 s: a few cases only).
errs gneg 1 'N -5: expected 1\.\.1073741824' gemm cpu double 8 -5 8
errs gta 1 "-ta X: expected N" gemm cpu double 8 8 8 -ta X
errs gshare 1 '-share-a maybe: expected auto, on or off' gemm cpu double 8 -share-a maybe
errs gpagedev 1 '-pageable is about host matrices' gemm cpu double 8 -pageable -device
errs gzreal 1 'imaginary part of -alpha or -beta needs -complex' gemm cpu double 8 -alpha 1,2
# Several ranks: each fills its blocks of the 2D block distribution (the library's grid, or
# -grid's), the library multiplies them by SUMMA, each rank checks its block of C.
run gnp3 0 3 gemm cpu double 37 29 41 -n 1 && \
    has gnp3 '^Plan: gemm 37x29x41 .*summa on 1x3 ranks' && has gnp3 '3 ranks x [0-9]+ threads' \
    && has gnp3 '^Blocks: 1x3 process grid .*rank 2 A 37x14 B 41x10 C 37x10' && \
    has gnp3 '^Reference: .*, full: 1073 of 1073 entries' && has gnp3 '^Verification: passed'
run ggrid 0 4 gemm cpu double 37 29 41 -grid 2x2 -ta T -tb T -order row -beta 0.5 -n 1 && \
    has ggrid 'summa on 2x2 ranks' && has ggrid 'op TT, row major' && \
    has ggrid '^Verification: passed'
run gf6 0 6 gemm cpu float 53 47 61 -ta T -alpha -1.5 -beta 2 -pageable -n 1 && \
    has gf6 'summa on 2x3 ranks' && has gf6 '^Verification: passed'
run gz4 0 4 gemm cpu float 37 29 41 -complex -grid 2x2 -tb C -order row -beta 0.5,-0.5 -n 1 && \
    has gz4 '^Plan: gemm 37x29x41 complex float NC row cpu host: summa on 2x2 ranks' && \
    has gz4 '^Verification: passed'
run gbig2 0 2 gemm cpu double 600 600 600 -n 1 && \
    has gbig2 '^Reference: .*, sampled: 4784 of 360000 entries \(rows 599, .* and columns 599' \
    && has gbig2 '^Verification: passed'
run gjson4 0 4 gemm cpu double 40 30 20 -grid 1x4 -tb T -beta 1 -json "$tmp/g4.json" -n 2
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(not (d["verified"] is True and d["ranks"] == 4 and d["grid"] == [1, 4]
              and d["size"] == [40, 30, 20] and d["check"] == "full"
              and d["checked_entries"] == 1200 and d["max_error"] <= 1))' \
        "$tmp/g4.json" 2>/dev/null; then
    ok
else
    bad "gjson4: JSON file missing, not parsable, not verified or without ranks and grid"
fi
run ggridbad 2 4 gemm cpu double 8 -grid 3x2 && has ggridbad '-grid 3x2 has 6 ranks, the run has 4'
run ggridshort 2 3 gemm cpu double 8 -grid 3 && \
    has ggridshort '-grid 3: expected RxC, each factor 1\.\.2147483647'
if [ "$cuda" = 1 ]; then
    run gcuda 0 1 gemm cuda double 1000 900 800 -beta 1 -n 2 && \
        has gcuda '^Verification: passed' && has gcuda '^PCIe: ' && \
        has gcuda '^In-card cuBLAS rate: [0-9.e+-]+ TFLOP/s'
    run gcudapage 0 1 gemm cuda float 700 -pageable -tile 256 -panel 128 -ta T -n 1 && \
        has gcudapage '^Verification: passed'
    run gcudadev 0 1 gemm cuda float 500 400 300 -device -tb T -order row -n 2 && \
        has gcudadev '^Verification: passed' && has gcudadev 'this run: device matrices'
    # two ranks sharing the GPU: SUMMA, each rank's updates streamed through it
    run gcuda2 0 2 gemm cuda double 300 280 260 -tb T -beta 1 -panel 100 -n 1 && \
        has gcuda2 'summa on 1x2 ranks, 4 panels of up to 100' && has gcuda2 '^PCIe: ' && \
        has gcuda2 '^Bound: ' && has gcuda2 'not measured \(several ranks' && \
        has gcuda2 '^Verification: passed'
    # ... and device blocks: cuBLAS updates, the panels through host memory
    run gcudadev2 0 2 gemm cuda double 90 70 50 -device -ta T -panel 16 -n 1 && \
        has gcudadev2 'summa on 1x2 ranks' && has gcudadev2 'updates: cublas' && \
        has gcudadev2 '^Verification: passed'
else
    run gcudadev 1 1 gemm cpu double 8 8 8 -device && has gcudadev 'device'
    run gdev2 1 2 gemm cpu double 8 -device && has gdev2 '-device needs GPU memory'
fi

# Values out of range: exit status 2, the option as typed, its value and the valid range,
# before anything runs; process grids compared with the ranks exactly (no overflow).
refuse rsgrid 3 2 '-grid 4294967299x1x1: expected AxBxC, each factor 1\.\.2147483647' \
    stencil cpu double 9 9 9 -grid 4294967299x1x1
refuse rfgrid 1 2 '-ingrid 9x954437177x1 has 8589934593 ranks, the run has 1' \
    fft c2c cpu double 9 9 9 -ingrid 9x954437177x1
refuse rpgrid 1 2 '-grid 2147483647x2147483647x2147483647 has more than [0-9]+ ranks' \
    poisson cpu double 8 8 8 -grid 2147483647x2147483647x2147483647
refuse rggrid 1 2 '-grid 65536x65536 has 4294967296 ranks, the run has 1' \
    gemm cpu double 8 -grid 65536x65536
refuse rfuse 1 2 '-fuse 2147483647: expected 0\.\.1024' stencil cpu double 8 8 8 -fuse 2147483647
refuse rlevels 1 2 '-levels 1025: expected 0\.\.1024' stencil cpu double 8 8 8 -levels 1025
range='expected a number above 0, at most 1e\+06'
refuse rbinf 1 2 "-budget inf: $range" fft c2c cpu double 8 8 8 -budget inf
refuse rbbig 1 2 "-budget 1e300: $range" stencil cpu double 8 8 8 -budget 1e300
refuse rbnan 1 2 "-budget nan: $range" gemm cpu double 8 -budget nan
refuse rbneg 1 2 "-budget -1: $range" poisson cpu double 8 8 8 -budget -1
refuse rruns 1 2 '-n 99999999999999999999: expected 1\.\.1000000' \
    fft c2c cpu double 8 8 8 -n 99999999999999999999
refuse rseed 1 2 '-seed 4294967296: expected 0\.\.4294967295' \
    poisson cpu double 8 8 8 -seed 4294967296
refuse rbatch 1 2 '-batch 2x: expected 1\.\.1073741824' fft c2c cpu double 8 8 8 -batch 2x
refuse rsteps 1 2 '-steps 2147483648: expected 0\.\.2147483647' \
    stencil cpu double 8 8 8 -steps 2147483648
refuse rsize 1 2 "NZ 9999999999: expected 1\.\.1073741824" \
    fft c2c cpu double 8 8 9999999999
refuse rpoints 1 2 'NX NY NZ 1073741824 1073741824 1073741824: 1073741824 x 1073741824 x 1073741824 points, more than 2\^62' \
    stencil cpu float 1073741824 1073741824 1073741824
refuse rh 1 2 '-h 1 0 1: expected 3 numbers, each a finite number above 0' \
    poisson cpu double 8 8 8 -h 1 0 1
refuse ralpha 1 2 '-alpha nan: expected a finite number' poisson cpu double 8 8 8 -alpha nan
refuse rgalpha 1 2 '-alpha 1,inf: expected a finite number A, or A,I' \
    gemm cpu double 8 -complex -alpha 1,inf
refuse rtile 1 2 '-tile -1: expected 0\.\.1073741824' gemm cpu double 8 -tile -1

# What a new user types wrong (issue 45): the argument as typed, its value and the valid range
# in a few lines and a hint to --help, exit status 2; what the machine lacks, exit status 1.
refuse uneg 2 2 'NX -5: expected 1\.\.1073741824' fft c2c cpu double -5 8 8 && terse uneg
refuse ugemmk 1 2 'M N 16 8 without K: expected M alone' gemm cpu double 16 8 && terse ugemmk
refuse uspacing 1 2 '-h 1e-300 1 1: expected spacings from 1e-150 to 1e\+150' \
    poisson cpu double 8 8 8 -h 1e-300 1 1 && terse uspacing
refuse ustretch 1 2 '-stretch 1000: cells of no width at z.s faces' \
    poisson cpu double 16 8 8 -bc ppd -stretch 1000 && terse ustretch
refuse unomode 1 2 'NX NY NZ 1 1 1: no mode fits the grid' poisson cpu double 1 1 1
# a run larger than the node's memory: the header with the memory it needs, then a refusal,
# before anything is allocated (exit status 1, quickly)
refuse umem 2 1 'tide stencil: needs [0-9.e+]+ GB of host memory on a node \(2 ranks\), [0-9.e+]+ GB available' \
    stencil cpu double 65536 65536 65536 && before_alloc umem 'GB of host memory per rank'
refuse ugmem 1 1 'tide gemm: needs [0-9.e+]+ GB of host memory on a node' gemm cpu double 1000000
# ... and before planning, whose work memory would come first (the least the run takes)
refuse ufmem 2 1 'tide fft: needs [0-9.e+]+ GB of host memory on a node \(2 ranks\)' \
    fft c2c cpu double 4096 4096 4096
refuse upmem 2 1 'tide poisson: needs [0-9.e+]+ GB of host memory on a node \(2 ranks\)' \
    poisson cpu double 8192 8192 4096
# TIDE_LOG with a value it does not know: one warning, not one per rank or per context
if TIDE_LOG=bogus timeout -k 10 30 "$mpiexec" -n 2 "$tide" info > "$tmp/log.out" 2>&1 &&
   [ "$(grep -c 'TIDE_LOG=bogus is not a level: expected warn, info or debug' "$tmp/log.out")" = 1 ]
then ok; else bad "log: TIDE_LOG=bogus not warned about exactly once"; sed 's/^/    /' "$tmp/log.out" | head; fi
# progress on a non-terminal stderr: plain lines with percent and time left, no \r; none with
# -progress 0
timeout -k 10 60 "$mpiexec" -n 2 "$tide" fft c2c cpu double 16 16 16 -n 300 -progress 0.01 \
    > "$tmp/prog.out" 2> "$tmp/prog.err"
lines=$(grep -Ec '^tide fft: timed runs [0-9]+% \([0-9]+/300\), [0-9]+ s(, about [0-9]+ (s|min [0-9]+ s) left)?$' \
        "$tmp/prog.err")
if [ "$lines" -ge 1 ] && ! grep -q $'\r' "$tmp/prog.err"; then ok; else
    bad "progress: $lines progress lines of tide fft -progress 0.01 on a file"; head "$tmp/prog.err"; fi
# ... and inside one long call, the library's lines (tide_context_set_progress): a multiply's
# panels, a stencil run's passes
timeout -k 10 60 "$mpiexec" -n 2 "$tide" gemm cpu double 400 -grid 2x1 -panel 8 -n 1 \
    -progress 0.000001 > "$tmp/prog.out" 2> "$tmp/prog.err"
timeout -k 10 60 "$mpiexec" -n 2 "$tide" stencil cpu float 24 24 24 -steps 50 -fuse 1 -n 1 \
    -progress 0.000001 > "$tmp/prog.out" 2>> "$tmp/prog.err"
in_call='^\[tide 0/2 progress\] '
if grep -Eq "$in_call"'tide_gemm_execute: [0-9]+% \([0-9]+/50 panels\), [0-9]+ s, about [0-9]+ s left$' \
       "$tmp/prog.err" &&
   grep -Eq "$in_call"'tide_gemm_execute: done \(50 panels\) in [0-9]+ s$' "$tmp/prog.err" &&
   grep -Eq "$in_call"'tide_stencil_run: [0-9]+% \([0-9]+/50 passes\)' "$tmp/prog.err" &&
   ! grep -q '^\[tide 1/2 progress\]' "$tmp/prog.err"; then ok; else
    bad "progress: no lines from inside tide_gemm_execute and tide_stencil_run on rank 0 alone"
    head "$tmp/prog.err"; fi
refuse uprog 1 2 '-progress -1: expected seconds from 0 \(none\) to 86400' \
    gemm cpu double 8 -progress -1

# -json: a place that cannot be written found before the work, with the system's reason; a
# write that fails (a full disk) exit status 1 on every rank alike, quickly.
refuse jnodir 3 1 "-json: cannot create $tmp/none/f\.json: No such file or directory" \
    fft c2c cpu double 8 8 8 -n 1 -json "$tmp/none/f.json" && before jnodir
refuse jproc 1 1 '-json: cannot create /proc/x\.json: ' \
    stencil cpu double 8 8 8 -n 1 -json /proc/x.json && before jproc
refuse jdir 2 1 "-json: cannot create $tmp: Is a directory" \
    poisson cpu double 8 8 8 -n 1 -json "$tmp" && before jdir
refuse jgemm 2 1 "-json: cannot create $tmp/none/g\.json: No such file or directory" \
    gemm cpu double 8 -n 1 -json "$tmp/none/g.json" && before jgemm
full='-json: cannot write /dev/full: No space left on device'
refuse jfull1 1 1 "$full" fft c2c cpu double 8 8 8 -n 1 -json /dev/full
refuse jfull3 3 1 "$full" fft c2c cpu double 8 8 8 -n 1 -json /dev/full
refuse jfulls 2 1 "$full" stencil cpu double 8 8 8 -n 1 -json /dev/full
refuse jfullp 1 1 "$full" poisson cpu double 8 8 8 -n 1 -json /dev/full
refuse jfullg 3 1 "$full" gemm cpu double 8 -n 1 -json /dev/full

# Output that cannot be written to stdout (a full disk): exit status 1 and the reason. Under
# mpiexec the ranks write through it, and it drops such errors: one process alone (an MPI
# singleton) shows them.
if timeout -k 10 60 "$tide" --version > /dev/null 2>&1; then
    timeout -k 10 60 "$tide" --help > /dev/full 2> "$tmp/stdout.err"
    rc=$?
    if [ "$rc" -eq 1 ] && \
       grep -q '^tide: cannot write the standard output: No space left on device' "$tmp/stdout.err"
    then
        ok
    else
        bad "stdout: exit status $rc writing to /dev/full, expected 1 and the reason"
    fi
fi

echo "test_app: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
