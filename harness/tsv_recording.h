// SPDX-License-Identifier: Apache-2.0
/*
 * tsv_recording.h - reads NCCL callback recordings (tests/data/recordings)
 * (one line per callback, tab-separated; format in that folder's README)
 * into a replay script.
 *
 * API v7 (NCCL 2.31) lines use keys the README does not list yet:
 * `userTag=` on CollApi, P2pApi, Coll, P2p and CeColl, `kernelVariant=`
 * and `isSymColl=` on Coll, and KernelPhase starts with `ch= phaseId=
 * phaseName= ptimer=` (its KernelPhaseStop, state 31, carries `ptimer=`).
 * Absent keys read as 0 / NULL, as in recordings of older versions.
 */
#ifndef NSC_TSV_RECORDING_H
#define NSC_TSV_RECORDING_H

#include "replay.h"

/* Returns 0, or -1 with a message naming the file and line. */
int nsc_script_from_tsv(struct nsc_script *s, const char *path, char *err, size_t errlen);

#endif /* NSC_TSV_RECORDING_H */
