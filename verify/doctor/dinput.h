/* dinput.h - p2p-doctor's input: the files of a directory, read without
 * trusting them (regular files only, no links followed, binary data and
 * oversized files refused or cut, with the reason recorded) (pure C). */
#ifndef P2PD_DINPUT_H
#define P2PD_DINPUT_H

#include "dmodel.h"

typedef struct {
    long long max_file_bytes;  /* read at most this much of one file */
    long long max_total_bytes; /* and of all files together */
} dr_limits;

/* Read every regular file of dir (not recursive; field-report metadata
 * source.txt, diagnosis.txt, expected.txt and README* left out) into m.
 * Returns the number of files read (status read or partial), -1 when dir
 * cannot be opened (errno set). */
int dr_read_dir(dr_model *m, const char *dir, const dr_limits *lim);
/* Read one open file descriptor as file `name` of m.  Returns 1 if read. */
int dr_read_fd(dr_model *m, int fd, const char *name, const dr_limits *lim, long long *total);

#endif
