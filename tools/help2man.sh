#!/bin/sh
# tools/help2man.sh: nstbatch's manual page, made from its own --help (so the two never disagree).
#   tools/help2man.sh build/nstbatch > nstbatch.1 ; man -l nstbatch.1
set -eu
NST=${1:?usage: tools/help2man.sh NSTBATCH > nstbatch.1}
version=$("$NST" --version | sed -n '1s/^nstbatch //p')
cat <<HEAD
.TH NSTBATCH 1 "" "nstbatch $version" "User Commands"
.SH NAME
nstbatch \- tile-parallel Gatys neural style transfer for images of any size, over MPI ranks
.SH DESCRIPTION
The text below is \fBnstbatch \-\-help\fR. The manual (README.md, with the reference and the design
notes in docs/) and the licence (LICENSE) are installed under \fIshare/doc/nstbatch\fR; the Slurm
templates under \fIshare/nstbatch/slurm\fR.
.PP
.nf
HEAD
# roff: a backslash is written \e; a line that starts with . or ' is protected by \&
"$NST" --help | sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
cat <<'TAIL'
.fi
.SH EXIT STATUS
0 done; 2 bad input (config, flags, images, weights); 1 runtime failure; 75 stopped by
SIGUSR1/SIGTERM/SIGHUP (or Ctrl-C, without mpirun or under srun -X) after writing a checkpoint
(requeue the job, or run it again, to resume; a second Ctrl-C, a second later, stops at once).
.SH SEE ALSO
.BR mpirun (1),
.BR sbatch (1)
TAIL
