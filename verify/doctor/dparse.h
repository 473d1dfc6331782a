/* dparse.h - p2p-doctor's parsers: command outputs, as users paste them or
 * as `build.sh doctor --collect` writes them, into dr_model facts (pure C).
 *
 * Every line of every file goes through every parser; each parser knows its
 * output by content (a header, a line shape), never by the file's name, so
 * pasted outputs under any name, several outputs in one file, excerpts,
 * prompts and journalctl prefixes are all read.  Nothing read is trusted:
 * lines are cut at DP_LINE_MAX, control bytes and ANSI escapes removed. */
#ifndef P2PD_DPARSE_H
#define P2PD_DPARSE_H

#include <stddef.h>

#include "dmodel.h"

#define DP_LINE_MAX 4096

typedef struct dp_ctx dp_ctx;

/* Start parsing file number fi of m (m->files[fi] holds its name). */
dp_ctx *dp_begin(dr_model *m, int fi);
/* One line (no newline; already cleaned by dp_clean_line).  lineno 1-based. */
void dp_line(dp_ctx *c, const char *line, long lineno);
/* End of the file: finish pending blocks, free c. */
void dp_end(dp_ctx *c);

/* Clean a raw line in place: ANSI escapes and control bytes out (tabs to
 * blanks), a trailing '\r' removed.  Returns the new length. */
size_t dp_clean_line(char *s, size_t len);

/* Convenience for tests and small inputs: register a file called name and
 * parse text as its content.  Returns the file's index, -1 when full. */
int dp_parse_text(dr_model *m, const char *name, const char *text);

/* Helpers the rules share. */
/* Normalise a GPU name for comparing models: lower case, without
 * "nvidia", "corporation", "geforce", chip codes in front of a bracket. */
void dp_model_key(const char *name, char *out, size_t outlen);
/* A driver version token (3-digit major: "550.54.15", "570.124") in s. */
int dp_find_version(const char *s, char *out, size_t outlen);
/* A PCI address anywhere in s ("0000:01:00.0", "00000000:01:00.0",
 * "01:00.0", "PCI:0000:01:00"), normalised. 0 on success. */
int dp_find_busid(const char *s, char *out, size_t outlen);
/* Compare "550.54.15" style versions: <0, 0, >0. */
int dp_vercmp(const char *a, const char *b);

#endif
