/* nst/run/dryrun.h: nstbatch --dry-run. */
#ifndef NST_DRYRUN_H
#define NST_DRYRUN_H

#include "../render/levels.h"
#include "../output/output.h"

/* Print every level's plan (size, tiles, halo, Gram strategy, memory per rank against the budget)
 * with a time estimate calibrated on this machine, and the output files (W x H), without rendering
 * or writing anything. Collective. */
nst_status nst_dry_run(const nst_levels_ctx *c, const nst_level_plan *p, const nst_output_spec *out, int W, int H);

#endif
