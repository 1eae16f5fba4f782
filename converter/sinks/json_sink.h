// SPDX-License-Identifier: Apache-2.0
/*
 * json_sink.h - the Chrome trace JSON encoder behind sink.h: one document
 * {"displayTimeUnit":"ns","traceEvents":[...],"metadata":{"ncclscope":...}}
 * per part, one event per line.
 */
#ifndef NSC_JSON_SINK_H
#define NSC_JSON_SINK_H

#include "json_writer.h"
#include "sink.h"

struct json_sink {
    struct jw *w;
    int first; /* no event in this part yet: no comma before the next */
};

void json_sink_begin(struct json_sink *j, struct jw *w);
void json_sink_event(struct json_sink *j, const struct nsc_tev *e);
/* Closes a part that the next one continues. */
void json_sink_end_part(struct json_sink *j, int part);
/* Closes the last part with the run's metadata. */
void json_sink_finish(struct json_sink *j, const struct nsc_args *meta);

#endif /* NSC_JSON_SINK_H */
