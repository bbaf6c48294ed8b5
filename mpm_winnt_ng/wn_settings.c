/* Pure directive parsing and limit resolution for mpm_winnt_ng. */
#include "wn_settings.h"

#include <ctype.h>
#include <string.h>

static int same_word(const char *a, const char *b)
{
    while (*a && tolower((unsigned char)*a) == tolower((unsigned char)*b)) {
        a++;
        b++;
    }
    return *a == '\0' && *b == '\0';
}

int wn_parse_test_hook(const char *arg)
{
    if (same_word(arg, "emulate-accept"))
        return WN_HOOK_EMULATE_ACCEPT;
    if (same_word(arg, "keepalive-in-thread"))
        return WN_HOOK_KEEPALIVE_IN_THREAD;
    if (same_word(arg, "crash-at-exit"))
        return WN_HOOK_CRASH_AT_EXIT;
    return 0;
}

static const char *const reuse_names[] = {
    "auto", "transmitfile", "disconnectex", "off"
};

int wn_parse_reuse(const char *arg, wn_reuse_mode *out)
{
    int i;

    for (i = 0; arg && i < (int)(sizeof reuse_names / sizeof *reuse_names); i++) {
        if (same_word(arg, reuse_names[i])) {
            *out = (wn_reuse_mode)i;
            return 0;
        }
    }
    return -1;
}

const char *wn_reuse_name(wn_reuse_mode mode)
{
    if ((int)mode < 0 || mode > WN_REUSE_OFF)
        return "?";
    return reuse_names[mode];
}

/* Children and process slots: slots are fixed by the first start-up; a
 * later ChildProcesses larger than they hold keeps the most they hold. */
static void resolve_children(const wn_settings *s, const wn_fixed *first,
                             wn_limits *out, int *changed)
{
    int children = s->children == WN_UNSET ? WN_DEFAULT_CHILDREN
                                           : s->children;

    if (first->process_slots <= 0) {
        out->process_slots = children * WN_SLOTS_PER_CHILD;
    } else {
        out->process_slots = first->process_slots;
        if (children * WN_SLOTS_PER_CHILD > first->process_slots) {
            *changed |= WN_CHANGED_CHILDREN;
            children = first->process_slots / WN_SLOTS_PER_CHILD;
        }
    }
    out->children = children;
}

const char *wn_resolve(const wn_settings *s, const wn_fixed *first,
                       wn_limits *out, int *changed)
{
    int limit = s->thread_limit == WN_UNSET ? WN_DEFAULT_THREAD_LIMIT
                                            : s->thread_limit;

    *changed = 0;
    if (first->thread_limit > 0 && limit != first->thread_limit) {
        *changed |= WN_CHANGED_THREAD_LIMIT;
        limit = first->thread_limit;
    }
    out->thread_limit = limit;
    out->threads_per_child = s->threads_per_child == WN_UNSET
        ? (WN_DEFAULT_THREADS_PER_CHILD < limit ? WN_DEFAULT_THREADS_PER_CHILD
                                                : limit)
        : s->threads_per_child;
    if (out->threads_per_child > limit)
        return "ThreadsPerChild is larger than ThreadLimit: raise ThreadLimit "
               "(a full stop and start is needed) or lower ThreadsPerChild";
    out->accepts = s->accepts == WN_UNSET ? WN_DEFAULT_ACCEPTS : s->accepts;
    out->reuse = s->reuse == WN_UNSET ? WN_REUSE_AUTO : (wn_reuse_mode)s->reuse;
    resolve_children(s, first, out, changed);
    return NULL;
}
