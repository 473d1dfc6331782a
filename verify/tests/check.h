/* check.h - the unit tests' checks, shared by test_main.c and test_doctor.c:
 * every failing check prints its expression; main counts them. */
#ifndef P2PV_CHECK_H
#define P2PV_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

extern int g_checks, g_failed;
extern const char *g_fixtures;


#define CHECK(cond)                                                                                         \
    do {                                                                                                    \
        g_checks++;                                                                                         \
        if (!(cond)) {                                                                                      \
            g_failed++;                                                                                     \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                                 \
        }                                                                                                   \
    } while (0)
#define CHECK_INT(a, b)                                                                                     \
    do {                                                                                                    \
        long long a_ = (long long)(a), b_ = (long long)(b);                                                 \
        g_checks++;                                                                                         \
        if (a_ != b_) {                                                                                     \
            g_failed++;                                                                                     \
            fprintf(stderr, "FAIL %s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #a, a_, b_);      \
        }                                                                                                   \
    } while (0)
#define CHECK_NEAR(a, b, eps)                                                                               \
    do {                                                                                                    \
        double a_ = (a), b_ = (b);                                                                          \
        g_checks++;                                                                                         \
        if (!(fabs(a_ - b_) <= (eps))) {                                                                    \
            g_failed++;                                                                                     \
            fprintf(stderr, "FAIL %s:%d: %s == %.6f, expected %.6f\n", __FILE__, __LINE__, #a, a_, b_);      \
        }                                                                                                   \
    } while (0)
#define CHECK_STR(a, b)                                                                                     \
    do {                                                                                                    \
        const char *a_ = (a), *b_ = (b);                                                                    \
        g_checks++;                                                                                         \
        if (strcmp(a_, b_) != 0) {                                                                          \
            g_failed++;                                                                                     \
            fprintf(stderr, "FAIL %s:%d: %s ==\n---\n%s\n--- expected\n%s\n---\n", __FILE__, __LINE__, #a,   \
                    a_, b_);                                                                                \
        }                                                                                                   \
    } while (0)

/* A fixture file's content (NUL-terminated, malloc'ed); NULL and a failed
 * check when it is missing. */
char *slurp(const char *name);
/* Every check of the JSON validator: 1 when s is one JSON value. */
int json_valid(const char *s);

/* test_hazards.c */
void test_hazards(void);

/* test_doctor.c */
void test_doctor_parsers(void);
void test_doctor_rules(void);
void test_doctor_symptoms(void);
void test_doctor_input(void);
void test_doctor_json_reader(void);

#endif
