/* djson.c - small JSON reader (pure C).  Recursive descent over a buffer;
 * every read is bounds-checked against len. */
#include "djson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *s;
    size_t len, pos;
    dj_doc *doc;
    int max_nodes;
} dj_p;

static void ws(dj_p *p)
{
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        p->pos++;
    }
}

static int fail(dj_p *p, const char *what)
{
    snprintf(p->doc->err, sizeof p->doc->err, "%s at byte %zu", what, p->pos);
    return -1;
}

static int new_node(dj_p *p, int type, int parent)
{
    dj_doc *d = p->doc;
    if (d->n >= p->max_nodes)
        return -1;
    if (d->n >= d->cap) {
        int cap = d->cap ? d->cap * 2 : 256;
        if (cap > p->max_nodes)
            cap = p->max_nodes;
        dj_node *nn = realloc(d->nodes, (size_t)cap * sizeof(dj_node));
        if (!nn)
            return -1;
        d->nodes = nn;
        d->cap = cap;
    }
    dj_node *n = &d->nodes[d->n];
    memset(n, 0, sizeof(*n));
    n->type = type;
    n->parent = parent;
    n->next = -1;
    n->child = -1;
    return d->n++;
}

/* A string starting at the opening quote; sets start and slen to the raw body. */
static int str_body(dj_p *p, const char **start, size_t *slen)
{
    if (p->pos >= p->len || p->s[p->pos] != '"')
        return fail(p, "expected a string");
    size_t b = ++p->pos;
    while (p->pos < p->len) {
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == '"') {
            *start = p->s + b;
            *slen = p->pos - b;
            p->pos++;
            return 0;
        }
        if (c == '\\') {
            p->pos += 2;
            continue;
        }
        if (c < 0x20)
            return fail(p, "control character in a string");
        p->pos++;
    }
    return fail(p, "unterminated string");
}

static int value(dj_p *p, int parent, int depth);

static void link_child(dj_doc *d, int parent, int *last, int child)
{
    if (parent < 0)
        return;
    if (*last < 0)
        d->nodes[parent].child = child;
    else
        d->nodes[*last].next = child;
    *last = child;
    d->nodes[parent].nchild++;
}

static int container(dj_p *p, int parent, int depth, int is_obj)
{
    int me = new_node(p, is_obj ? DJ_OBJ : DJ_ARR, parent);
    if (me < 0)
        return fail(p, "too many values");
    p->pos++; /* [ or { */
    ws(p);
    char close = is_obj ? '}' : ']';
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
        return me;
    }
    int last = -1;
    for (;;) {
        const char *k = NULL;
        size_t kl = 0;
        ws(p);
        if (is_obj) {
            if (str_body(p, &k, &kl) < 0)
                return -1;
            ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':')
                return fail(p, "expected ':'");
            p->pos++;
        }
        int c = value(p, me, depth + 1);
        if (c < 0)
            return -1;
        p->doc->nodes[c].key = k;
        p->doc->nodes[c].keylen = kl;
        link_child(p->doc, me, &last, c);
        ws(p);
        if (p->pos >= p->len)
            return fail(p, "unexpected end");
        if (p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->s[p->pos] == close) {
            p->pos++;
            return me;
        }
        return fail(p, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int literal(dj_p *p, const char *word, int type, int parent)
{
    size_t l = strlen(word);
    if (p->len - p->pos < l || memcmp(p->s + p->pos, word, l) != 0)
        return fail(p, "unexpected character");
    p->pos += l;
    int me = new_node(p, type, parent);
    return me < 0 ? fail(p, "too many values") : me;
}

static int number(dj_p *p, int parent)
{
    char buf[64];
    size_t b = p->pos, n = 0;
    while (p->pos < p->len && n + 1 < sizeof buf && strchr("+-0123456789.eE", p->s[p->pos]))
        buf[n++] = p->s[p->pos++];
    buf[n] = '\0';
    char *end = NULL;
    double v = strtod(buf, &end);
    if (n == 0 || end != buf + n) {
        p->pos = b;
        return fail(p, "bad number");
    }
    int me = new_node(p, DJ_NUM, parent);
    if (me < 0)
        return fail(p, "too many values");
    p->doc->nodes[me].num = v;
    return me;
}

static int value(dj_p *p, int parent, int depth)
{
    if (depth > 64)
        return fail(p, "nested too deep");
    ws(p);
    if (p->pos >= p->len)
        return fail(p, "unexpected end");
    char c = p->s[p->pos];
    if (c == '{' || c == '[')
        return container(p, parent, depth, c == '{');
    if (c == '"') {
        const char *s;
        size_t l;
        if (str_body(p, &s, &l) < 0)
            return -1;
        int me = new_node(p, DJ_STR, parent);
        if (me < 0)
            return fail(p, "too many values");
        p->doc->nodes[me].str = s;
        p->doc->nodes[me].len = l;
        return me;
    }
    if (c == 't')
        return literal(p, "true", DJ_TRUE, parent);
    if (c == 'f')
        return literal(p, "false", DJ_FALSE, parent);
    if (c == 'n')
        return literal(p, "null", DJ_NULL, parent);
    return number(p, parent);
}

int dj_parse(dj_doc *doc, const char *text, size_t len, int max_nodes)
{
    memset(doc, 0, sizeof(*doc));
    dj_p p = {text, len, 0, doc, max_nodes > 0 ? max_nodes : 1};
    int root = value(&p, -1, 0);
    if (root < 0)
        return -1;
    ws(&p);
    if (p.pos != len)
        return fail(&p, "text after the JSON value");
    return 0;
}

void dj_free(dj_doc *doc)
{
    free(doc->nodes);
    memset(doc, 0, sizeof(*doc));
}

int dj_get(const dj_doc *d, int obj, const char *key)
{
    if (obj < 0 || obj >= d->n || d->nodes[obj].type != DJ_OBJ)
        return -1;
    size_t kl = strlen(key);
    for (int c = d->nodes[obj].child; c >= 0; c = d->nodes[c].next)
        if (d->nodes[c].keylen == kl && memcmp(d->nodes[c].key, key, kl) == 0)
            return c;
    return -1;
}

int dj_at(const dj_doc *d, int arr, int i)
{
    if (arr < 0 || arr >= d->n || d->nodes[arr].type != DJ_ARR || i < 0)
        return -1;
    int c = d->nodes[arr].child;
    while (c >= 0 && i-- > 0)
        c = d->nodes[c].next;
    return c;
}

void dj_str(const dj_doc *d, int node, char *out, size_t outlen)
{
    if (outlen == 0)
        return;
    out[0] = '\0';
    if (node < 0 || node >= d->n || d->nodes[node].type != DJ_STR)
        return;
    const char *s = d->nodes[node].str;
    size_t l = d->nodes[node].len, o = 0;
    for (size_t i = 0; i < l && o + 1 < outlen; i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < l) {
            char e = s[++i];
            c = (e == '"' || e == '\\' || e == '/') ? e : '?';
            if (e == 'u')
                i += 4 < l - i ? 4 : l - i - 1;
        }
        out[o++] = c;
    }
    out[o] = '\0';
}

double dj_num(const dj_doc *d, int node, double dflt)
{
    if (node < 0 || node >= d->n || d->nodes[node].type != DJ_NUM)
        return dflt;
    return d->nodes[node].num;
}

int dj_bool(const dj_doc *d, int node)
{
    if (node < 0 || node >= d->n)
        return -1;
    if (d->nodes[node].type == DJ_TRUE)
        return 1;
    if (d->nodes[node].type == DJ_FALSE)
        return 0;
    return -1;
}
