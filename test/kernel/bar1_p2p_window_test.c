/*
 * Host unit tests of bar1_p2p_window.h, the plain-C part of the BAR1 window
 * patch (p2p-0014). test/unit/bar1_window.bats extracts the header from each
 * family's patch and builds this file against it with the stand-ins in shim/.
 * Prints one line per failed check and "N checks, M failed"; exits 1 on any
 * failure.
 */
#include <stdio.h>
#include <string.h>

#include "gpu/bus/bar1_p2p_window.h"

static int checks;
static int failed;

#define CHECK(cond) check((cond), #cond, __LINE__)
#define CHECK_EQ(a, b) check_eq((unsigned long long)(a), (unsigned long long)(b), #a, #b, __LINE__)

static void check(int ok, const char *what, int line)
{
    checks++;
    if (!ok)
    {
        failed++;
        printf("FAIL line %d: %s\n", line, what);
    }
}

static void check_eq(unsigned long long a, unsigned long long b,
                     const char *ea, const char *eb, int line)
{
    checks++;
    if (a != b)
    {
        failed++;
        printf("FAIL line %d: %s == %s (0x%llx != 0x%llx)\n", line, ea, eb, a, b);
    }
}

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)
#define U64_MAX (~0ULL)

static void test_size(void)
{
    NvU64 size = 0;

    CHECK_EQ(bar1P2PWindowSize(1, 32 * GiB, &size), NV_OK);
    CHECK_EQ(size, 2 * MiB);
    CHECK_EQ(bar1P2PWindowSize(2 * MiB, 32 * GiB, &size), NV_OK);
    CHECK_EQ(size, 2 * MiB);
    CHECK_EQ(bar1P2PWindowSize(2 * MiB + 1, 32 * GiB, &size), NV_OK);
    CHECK_EQ(size, 4 * MiB);
    CHECK_EQ(bar1P2PWindowSize(64 * 1024, 256 * MiB, &size), NV_OK);
    CHECK_EQ(size, 2 * MiB);

    /* the largest window: BAR1 less the reserve */
    CHECK_EQ(bar1P2PWindowSize(32 * GiB - BAR1_P2P_WINDOW_RESERVE, 32 * GiB, &size), NV_OK);
    CHECK_EQ(size, 32 * GiB - BAR1_P2P_WINDOW_RESERVE);
    CHECK_EQ(bar1P2PWindowSize(32 * GiB - BAR1_P2P_WINDOW_RESERVE + 1, 32 * GiB, &size),
             NV_ERR_NOT_SUPPORTED);
    /* an allocation larger than BAR1 */
    CHECK_EQ(bar1P2PWindowSize(40 * GiB, 32 * GiB, &size), NV_ERR_NOT_SUPPORTED);
    /* a BAR1 no larger than the reserve takes no window */
    CHECK_EQ(bar1P2PWindowSize(2 * MiB, BAR1_P2P_WINDOW_RESERVE, &size), NV_ERR_NOT_SUPPORTED);
    CHECK_EQ(bar1P2PWindowSize(2 * MiB, 0, &size), NV_ERR_NOT_SUPPORTED);

    /* bad input; size untouched */
    size = 7;
    CHECK_EQ(bar1P2PWindowSize(0, 32 * GiB, &size), NV_ERR_INVALID_ARGUMENT);
    CHECK_EQ(bar1P2PWindowSize(U64_MAX, U64_MAX, &size), NV_ERR_INVALID_ARGUMENT);
    CHECK_EQ(bar1P2PWindowSize(U64_MAX - MiB, U64_MAX, &size), NV_ERR_INVALID_ARGUMENT);
    CHECK_EQ(size, 7);
    CHECK_EQ(bar1P2PWindowSize(2 * MiB, 32 * GiB, NULL), NV_ERR_INVALID_ARGUMENT);
    /* rounds near 2^64 without wrapping */
    CHECK_EQ(bar1P2PWindowSize(U64_MAX - 128 * MiB, U64_MAX, &size), NV_OK);
    CHECK_EQ(size, U64_MAX - 128 * MiB + 1);
    CHECK_EQ(bar1P2PWindowSize(U64_MAX - 2 * MiB, U64_MAX, &size), NV_ERR_NOT_SUPPORTED);
}

static void test_budget(void)
{
    BAR1_P2P_WINDOW_BUDGET b;

    memset(&b, 0, sizeof(b));
    CHECK_EQ(bar1P2PWindowBudgetTake(&b, 2 * MiB), NV_ERR_INVALID_ARGUMENT); /* not set up */

    b.bar1Size = 256 * MiB;
    CHECK_EQ(bar1P2PWindowBudgetTake(&b, 0), NV_ERR_INVALID_ARGUMENT);
    CHECK_EQ(bar1P2PWindowBudgetTake(NULL, 2 * MiB), NV_ERR_INVALID_ARGUMENT);
    CHECK_EQ(bar1P2PWindowBudgetTake(&b, 128 * MiB), NV_OK);
    CHECK_EQ(bar1P2PWindowBudgetTake(&b, 64 * MiB), NV_OK);
    CHECK_EQ(b.used, 192 * MiB);
    CHECK_EQ(b.count, 2);
    /* 256 MiB less the 64 MiB reserve is full */
    CHECK_EQ(bar1P2PWindowBudgetTake(&b, 2 * MiB), NV_ERR_INSUFFICIENT_RESOURCES);
    CHECK_EQ(b.used, 192 * MiB);
    CHECK_EQ(b.count, 2);

    /* given back, it can be taken again */
    CHECK_EQ(bar1P2PWindowBudgetGive(&b, 64 * MiB), NV_OK);
    CHECK_EQ(bar1P2PWindowBudgetTake(&b, 2 * MiB), NV_OK);
    CHECK_EQ(b.used, 130 * MiB);

    /* more given back than taken, or a window freed twice: refused, no change */
    CHECK_EQ(bar1P2PWindowBudgetGive(&b, 1 * GiB), NV_ERR_INVALID_STATE);
    CHECK_EQ(bar1P2PWindowBudgetGive(&b, 128 * MiB), NV_OK);
    CHECK_EQ(bar1P2PWindowBudgetGive(&b, 2 * MiB), NV_OK);
    CHECK_EQ(b.used, 0);
    CHECK_EQ(b.count, 0);
    CHECK_EQ(bar1P2PWindowBudgetGive(&b, 0), NV_ERR_INVALID_STATE);
    CHECK_EQ(bar1P2PWindowBudgetGive(NULL, 0), NV_ERR_INVALID_STATE);

    /* 64-bit sums */
    b.bar1Size = U64_MAX;
    b.used = U64_MAX - MiB;
    b.count = 1;
    CHECK_EQ(bar1P2PWindowBudgetTake(&b, 2 * MiB), NV_ERR_INSUFFICIENT_RESOURCES);
    CHECK_EQ(b.used, U64_MAX - MiB);

    /* a BAR1 smaller than the reserve */
    memset(&b, 0, sizeof(b));
    b.bar1Size = 32 * MiB;
    CHECK_EQ(bar1P2PWindowBudgetTake(&b, 2 * MiB), NV_ERR_INSUFFICIENT_RESOURCES);
}

static void test_placement(void)
{
    CHECK_EQ(bar1P2PWindowCheckPlacement(0, 2 * MiB, 256 * MiB), NV_OK);
    CHECK_EQ(bar1P2PWindowCheckPlacement(254 * MiB, 2 * MiB, 256 * MiB), NV_OK);
    CHECK_EQ(bar1P2PWindowCheckPlacement(64 * 1024, 2 * MiB, 256 * MiB), NV_ERR_INVALID_ADDRESS);
    CHECK_EQ(bar1P2PWindowCheckPlacement(1 * MiB, 2 * MiB, 256 * MiB), NV_ERR_INVALID_ADDRESS);
    CHECK_EQ(bar1P2PWindowCheckPlacement(256 * MiB, 2 * MiB, 256 * MiB), NV_ERR_INVALID_ADDRESS);
    CHECK_EQ(bar1P2PWindowCheckPlacement(0, 0, 256 * MiB), NV_ERR_INVALID_ADDRESS);
    CHECK_EQ(bar1P2PWindowCheckPlacement(U64_MAX - 2 * MiB + 1, 4 * MiB, U64_MAX),
             NV_ERR_INVALID_ADDRESS);
}

static void init_window(BAR1_P2P_WINDOW *w, NvU64 session, NvU64 memory, NvU32 owner,
                        NvU32 mapping, NvU64 bar1Offset, NvU64 size)
{
    memset(w, 0, sizeof(*w));
    w->keySession = session;
    w->keyMemory = memory;
    w->ownerInst = owner;
    w->mappingInst = mapping;
    w->bar1Offset = bar1Offset;
    w->mapLength = size;
    w->size = size;
    w->dmaBase = 0x4000000000ULL + bar1Offset;
}

static void test_encode(void)
{
    BAR1_P2P_WINDOW w;
    NvU64 a[4] = { 1, 2, 3, 4 };

    init_window(&w, 1, 2, 0, 1, 6 * MiB, 4 * MiB);
    w.mapLength = 3 * MiB;   /* a 3 MiB allocation in a 4 MiB window */

    CHECK_EQ(bar1P2PWindowEncode(&w, 0, 64 * 1024, 4, a), NV_OK);
    CHECK_EQ(a[0], w.dmaBase);
    CHECK_EQ(a[3], w.dmaBase + 3 * 64 * 1024);

    CHECK_EQ(bar1P2PWindowEncode(&w, 2 * MiB, 512 * 1024, 2, a), NV_OK);
    CHECK_EQ(a[0], w.dmaBase + 2 * MiB);
    CHECK_EQ(a[1], w.dmaBase + 2 * MiB + 512 * 1024);

    /* the last page ends exactly at the end of the mapped allocation */
    CHECK_EQ(bar1P2PWindowEncode(&w, 3 * MiB - 64 * 1024, 64 * 1024, 1, a), NV_OK);

    /* beyond what is mapped (though inside the rounded window): refused, untouched */
    a[0] = 11;
    CHECK_EQ(bar1P2PWindowEncode(&w, 3 * MiB, 64 * 1024, 1, a), NV_ERR_INVALID_ADDRESS);
    CHECK_EQ(bar1P2PWindowEncode(&w, 2 * MiB, 512 * 1024, 3, a), NV_ERR_INVALID_ADDRESS);
    CHECK_EQ(a[0], 11);

    /* overflow of offset + span and of count * pageSize */
    CHECK_EQ(bar1P2PWindowEncode(&w, U64_MAX - 1000, 64 * 1024, 1, a), NV_ERR_INVALID_ADDRESS);
    CHECK_EQ(bar1P2PWindowEncode(&w, 0, 1ULL << 40, 1ULL << 30, a), NV_ERR_INVALID_ADDRESS);

    /* a window whose bus range would wrap */
    w.dmaBase = U64_MAX - MiB;
    CHECK_EQ(bar1P2PWindowEncode(&w, 0, 64 * 1024, 1, a), NV_ERR_INVALID_ADDRESS);

    /* a page whose bus address is not aligned to its size: its PTE would drop the low bits */
    init_window(&w, 1, 2, 0, 1, 6 * MiB, 4 * MiB);
    CHECK_EQ(bar1P2PWindowEncode(&w, 64 * 1024, 2 * MiB, 1, a), NV_ERR_INVALID_ADDRESS);
    w.dmaBase += 64 * 1024;   /* an IOVA on a 64 KiB boundary only */
    CHECK_EQ(bar1P2PWindowEncode(&w, 0, 2 * MiB, 1, a), NV_ERR_INVALID_ADDRESS);
    CHECK_EQ(bar1P2PWindowEncode(&w, 0, 64 * 1024, 2, a), NV_OK);
    CHECK_EQ(bar1P2PWindowEncode(&w, 0, 3 * 64 * 1024, 1, a), NV_ERR_INVALID_ARGUMENT);

    /* a record whose mapping is larger than its window is not trusted */
    init_window(&w, 1, 2, 0, 1, 0, 2 * MiB);
    w.mapLength = 4 * MiB;
    CHECK_EQ(bar1P2PWindowEncode(&w, 0, 64 * 1024, 1, a), NV_ERR_INVALID_ADDRESS);

    CHECK_EQ(bar1P2PWindowEncode(NULL, 0, 64 * 1024, 1, a), NV_ERR_INVALID_ARGUMENT);
    CHECK_EQ(bar1P2PWindowEncode(&w, 0, 0, 1, a), NV_ERR_INVALID_ARGUMENT);
    CHECK_EQ(bar1P2PWindowEncode(&w, 0, 64 * 1024, 0, a), NV_ERR_INVALID_ARGUMENT);
    CHECK_EQ(bar1P2PWindowEncode(&w, 0, 64 * 1024, 1, NULL), NV_ERR_INVALID_ARGUMENT);
}

static int list_length(BAR1_P2P_WINDOW *p)
{
    int n = 0;
    for (; p != NULL; p = p->pNext)
        n++;
    return n;
}

static void test_list(void)
{
    BAR1_P2P_WINDOW w[6];
    BAR1_P2P_WINDOW dup;
    BAR1_P2P_WINDOW *head = NULL;
    BAR1_P2P_WINDOW *p;
    int n;

    /* session 1: GPU0's memory mapped by GPU1 (two), GPU1's by GPU0, GPU2's by GPU0 */
    init_window(&w[0], 1, 100, 0, 1, 0, 2 * MiB);
    init_window(&w[1], 1, 101, 0, 1, 2 * MiB, 4 * MiB);
    init_window(&w[2], 1, 102, 1, 0, 0, 2 * MiB);
    init_window(&w[3], 1, 103, 2, 0, 0, 2 * MiB);
    /* session 2: the same memory handle value, another client */
    init_window(&w[4], 2, 100, 0, 1, 6 * MiB, 2 * MiB);
    init_window(&w[5], 2, 104, 1, 2, 2 * MiB, 2 * MiB);

    for (n = 0; n < 6; n++)
        CHECK_EQ(bar1P2PWindowInsert(&head, &w[n]), NV_OK);
    CHECK_EQ(list_length(head), 6);

    CHECK(bar1P2PWindowFind(head, 1, 100) == &w[0]);
    CHECK(bar1P2PWindowFind(head, 2, 100) == &w[4]);
    CHECK(bar1P2PWindowFind(head, 3, 100) == NULL);

    /* a second window for one key, and overlapping windows, are refused */
    init_window(&dup, 1, 100, 0, 1, 100 * MiB, 2 * MiB);
    CHECK_EQ(bar1P2PWindowInsert(&head, &dup), NV_ERR_IN_USE);
    init_window(&dup, 1, 200, 0, 1, 4 * MiB, 2 * MiB);  /* inside w[1] */
    CHECK_EQ(bar1P2PWindowInsert(&head, &dup), NV_ERR_INVALID_ADDRESS);
    init_window(&dup, 1, 200, 0, 1, 5 * MiB, 2 * MiB);  /* straddles w[1] and w[4] */
    CHECK(bar1P2PWindowOverlaps(head, 0, 5 * MiB, 2 * MiB));
    CHECK_EQ(bar1P2PWindowInsert(&head, &dup), NV_ERR_INVALID_ADDRESS);
    /* adjacent is fine, and the same offset in another GPU's BAR1 too */
    CHECK(!bar1P2PWindowOverlaps(head, 0, 8 * MiB, 2 * MiB));
    CHECK(!bar1P2PWindowOverlaps(head, 3, 0, 2 * MiB));
    CHECK_EQ(list_length(head), 6);
    CHECK_EQ(bar1P2PWindowInsert(NULL, &dup), NV_ERR_INVALID_ARGUMENT);
    CHECK_EQ(bar1P2PWindowInsert(&head, NULL), NV_ERR_INVALID_ARGUMENT);

    /* one memory object freed: only its window goes */
    p = bar1P2PWindowUnlinkNext(&head, BAR1_P2P_WINDOW_MATCH_MEMORY, 1, 101, 0);
    CHECK(p == &w[1]);
    CHECK(p->pNext == NULL);
    CHECK(bar1P2PWindowUnlinkNext(&head, BAR1_P2P_WINDOW_MATCH_MEMORY, 1, 101, 0) == NULL);
    CHECK_EQ(list_length(head), 5);
    /* its BAR1 range is free again */
    CHECK(!bar1P2PWindowOverlaps(head, 0, 2 * MiB, 4 * MiB));

    /* GPU 2 of session 1 torn down: windows where it owns or maps, in that session only */
    n = 0;
    while ((p = bar1P2PWindowUnlinkNext(&head, BAR1_P2P_WINDOW_MATCH_GPU, 1, 0, 2)) != NULL)
    {
        CHECK(p == &w[3]);
        n++;
    }
    CHECK_EQ(n, 1);
    CHECK(bar1P2PWindowFind(head, 2, 104) == &w[5]);   /* session 2 keeps its GPU 2 window */

    /* GPU 0 of session 1: as owner (w[0]) and as mapping GPU (w[2]) */
    n = 0;
    while ((p = bar1P2PWindowUnlinkNext(&head, BAR1_P2P_WINDOW_MATCH_GPU, 1, 0, 0)) != NULL)
    {
        CHECK((p == &w[0]) || (p == &w[2]));
        n++;
    }
    CHECK_EQ(n, 2);
    CHECK_EQ(list_length(head), 2);

    /* session 2 ends: all of its windows, nothing else is left */
    n = 0;
    while ((p = bar1P2PWindowUnlinkNext(&head, BAR1_P2P_WINDOW_MATCH_SESSION, 2, 0, 0)) != NULL)
        n++;
    CHECK_EQ(n, 2);
    CHECK(head == NULL);
    CHECK(bar1P2PWindowUnlinkNext(&head, BAR1_P2P_WINDOW_MATCH_SESSION, 2, 0, 0) == NULL);
    CHECK(bar1P2PWindowUnlinkNext(NULL, BAR1_P2P_WINDOW_MATCH_SESSION, 2, 0, 0) == NULL);

    /* an unknown match kind takes nothing */
    CHECK_EQ(bar1P2PWindowInsert(&head, &w[0]), NV_OK);
    CHECK(bar1P2PWindowUnlinkNext(&head, 99, 1, 100, 0) == NULL);
    CHECK(head == &w[0]);
}

/* The teardown order of the driver, as a sequence on the budget and list:
 * every window torn down gives back exactly what it took. */
static void test_teardown_accounting(void)
{
    BAR1_P2P_WINDOW w[3];
    BAR1_P2P_WINDOW_BUDGET budget[2];
    BAR1_P2P_WINDOW *head = NULL;
    BAR1_P2P_WINDOW *p;
    NvU64 sizes[3] = { 3 * MiB, 2 * MiB, 10 * MiB };
    NvU64 offset = 0;
    int i;

    memset(budget, 0, sizeof(budget));
    budget[0].bar1Size = 256 * MiB;
    budget[1].bar1Size = 256 * MiB;

    for (i = 0; i < 3; i++)
    {
        NvU64 ws = 0;
        CHECK_EQ(bar1P2PWindowSize(sizes[i], budget[0].bar1Size, &ws), NV_OK);
        CHECK_EQ(bar1P2PWindowBudgetTake(&budget[0], ws), NV_OK);
        init_window(&w[i], 7, 300 + i, 0, 1, offset, ws);
        w[i].mapLength = sizes[i];
        CHECK_EQ(bar1P2PWindowCheckPlacement(offset, ws, budget[0].bar1Size), NV_OK);
        CHECK_EQ(bar1P2PWindowInsert(&head, &w[i]), NV_OK);
        offset += ws;
    }
    CHECK_EQ(budget[0].used, 4 * MiB + 2 * MiB + 10 * MiB);
    CHECK_EQ(budget[0].count, 3);
    CHECK_EQ(budget[1].used, 0);

    while ((p = bar1P2PWindowUnlinkNext(&head, BAR1_P2P_WINDOW_MATCH_SESSION, 7, 0, 0)) != NULL)
        CHECK_EQ(bar1P2PWindowBudgetGive(&budget[p->ownerInst], p->size), NV_OK);

    CHECK_EQ(budget[0].used, 0);
    CHECK_EQ(budget[0].count, 0);
    CHECK(head == NULL);
}

int main(void)
{
    test_size();
    test_budget();
    test_placement();
    test_encode();
    test_list();
    test_teardown_accounting();

    printf("%d checks, %d failed\n", checks, failed);
    return failed ? 1 : 0;
}
