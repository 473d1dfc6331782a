/* djson.h - a small JSON reader for p2p-doctor (p2p-verify --json output):
 * parses text into a flat node array, with depth and size limits, and
 * never trusts what it reads (pure C). */
#ifndef P2PD_DJSON_H
#define P2PD_DJSON_H

#include <stddef.h>

enum { DJ_NULL, DJ_FALSE, DJ_TRUE, DJ_NUM, DJ_STR, DJ_ARR, DJ_OBJ };

typedef struct {
    int type;
    int parent;
    int next;        /* next sibling, -1 none */
    int child;       /* first child (arrays, objects), -1 none */
    int nchild;
    const char *key; /* member name inside an object (points into buf) */
    size_t keylen;
    const char *str; /* string value (raw, escapes not decoded) */
    size_t len;
    double num;
} dj_node;

typedef struct {
    dj_node *nodes;
    int n, cap;
    char err[120];
} dj_doc;

/* Parse text[0..len). 0 on success; else -1 with doc->err set.  At most
 * max_nodes values, nesting at most 64. */
int dj_parse(dj_doc *doc, const char *text, size_t len, int max_nodes);
void dj_free(dj_doc *doc);
/* Member of object node obj named key, -1 if none (or obj not an object). */
int dj_get(const dj_doc *d, int obj, const char *key);
/* Element i of array node arr, -1 if none. */
int dj_at(const dj_doc *d, int arr, int i);
/* String value copied (escapes \" \\ \/ kept simple, others as '?'); "" if
 * not a string. */
void dj_str(const dj_doc *d, int node, char *out, size_t outlen);
/* Number value, or dflt when not a number. */
double dj_num(const dj_doc *d, int node, double dflt);
/* 1 true, 0 false, -1 other. */
int dj_bool(const dj_doc *d, int node);

#endif
