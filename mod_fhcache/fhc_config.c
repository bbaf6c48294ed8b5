/* mod_fhcache directives: parsing, validation at configuration time, and
 * the resolved limits handed to the cache core. */
#include "fhc_module.h"
#include "mpmng_int.h"

#include "http_log.h"
#include "apr_strings.h"
#include "apr_lib.h"

APLOG_USE_MODULE(fhcache);

#define DEF_MAX_ENTRIES 4096
#define DEF_IDLE_SECS 60
#define DEF_MIN_USES 1
#define DEF_MEM_FILE_MAX 16384
#define DEF_MEM_TOTAL (16 * 1024 * 1024)
#define DEF_REVALIDATE_WATCHED_SECS 2
#define DEF_MAX_WATCHES 1024

int fhc_any_enabled;

void *fhc_create_server_conf(apr_pool_t *p, server_rec *s)
{
    fhc_server_conf *c = apr_pcalloc(p, sizeof(*c));
    c->max_entries = DEF_MAX_ENTRIES;
    c->max_fds = FHC_UNSET;
    c->idle_secs = DEF_IDLE_SECS;
    c->min_uses = DEF_MIN_USES;
    c->mem_file_max = DEF_MEM_FILE_MAX;
    c->mem_total = DEF_MEM_TOTAL;
    c->revalidate_secs = FHC_UNSET;
    c->notify = 1;
    c->max_watches = DEF_MAX_WATCHES;
    return c;
}

void *fhc_create_dir_conf(apr_pool_t *p, char *dir)
{
    fhc_dir_conf *c = apr_pcalloc(p, sizeof(*c));
    c->enabled = FHC_UNSET;
    return c;
}

void *fhc_merge_dir_conf(apr_pool_t *p, void *basev, void *addv)
{
    fhc_dir_conf *base = basev, *add = addv;
    fhc_dir_conf *c = apr_pcalloc(p, sizeof(*c));
    c->enabled = add->enabled != FHC_UNSET ? add->enabled : base->enabled;
    return c;
}

/* The cache is one per child process, so its limits are global. */
static const char *main_server_only(cmd_parms *cmd)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
    if (err) {
        return apr_pstrcat(cmd->pool, cmd->cmd->name, " applies to the whole "
                           "server (one cache per child): move it out of "
                           "<VirtualHost> and sections", NULL);
    }
    return NULL;
}

/* Bytes with an optional K/M/G suffix. */
static const char *parse_size(cmd_parms *cmd, const char *arg,
                              apr_off_t max, apr_off_t *out)
{
    char *end;
    apr_int64_t v = apr_strtoi64(arg, &end, 10);
    apr_int64_t mult = 1;
    if (*end && !end[1]) {
        switch (apr_toupper(*end)) {
        case 'K': mult = 1024; end++; break;
        case 'M': mult = 1024 * 1024; end++; break;
        case 'G': mult = 1024 * 1024 * 1024; end++; break;
        }
    }
    if (!*arg || *end || v < 0 || v > max / mult) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a size from 0 to %"
                            APR_OFF_T_FMT " bytes (suffixes K, M, G allowed)",
                            cmd->cmd->name, arg, max);
    }
    *out = v * mult;
    return NULL;
}

static fhc_server_conf *sconf(cmd_parms *cmd)
{
    return ap_get_module_config(cmd->server->module_config, &fhcache_module);
}

static const char *set_enable(cmd_parms *cmd, void *dv, int on)
{
    ((fhc_dir_conf *)dv)->enabled = on;
    if (on) {
        fhc_any_enabled = 1;
    }
    return NULL;
}

#define INT_SETTER(fn, field, min, max)                                    \
static const char *fn(cmd_parms *cmd, void *dv, const char *arg)           \
{                                                                          \
    const char *err = main_server_only(cmd);                               \
    return err ? err : mpmng_cmd_int(cmd, arg, min, max, NULL,             \
                                     &sconf(cmd)->field);                  \
}

INT_SETTER(set_max_entries, max_entries, 1, 1000000)
INT_SETTER(set_idle, idle_secs, 0, 86400)
INT_SETTER(set_min_uses, min_uses, 1, 1000)
INT_SETTER(set_revalidate, revalidate_secs, 0, 3600)
INT_SETTER(set_max_watches, max_watches, 1, 1000000)

static const char *set_max_fds(cmd_parms *cmd, void *dv, const char *arg)
{
    const char *err = main_server_only(cmd);
    if (err) {
        return err;
    }
    if (!strcasecmp(arg, "auto")) {
        sconf(cmd)->max_fds = FHC_UNSET;
        return NULL;
    }
    return mpmng_cmd_int(cmd, arg, 0, 1000000, "'auto' or ",
                         &sconf(cmd)->max_fds);
}

static const char *set_mem_file(cmd_parms *cmd, void *dv, const char *arg)
{
    const char *err = main_server_only(cmd);
    /* Bodies are read in one go at fill time: keep them small. */
    return err ? err : parse_size(cmd, arg, 16 * 1024 * 1024,
                                  &sconf(cmd)->mem_file_max);
}

static const char *set_mem_total(cmd_parms *cmd, void *dv, const char *arg)
{
    const char *err = main_server_only(cmd);
    return err ? err : parse_size(cmd, arg, (apr_off_t)64 * 1024 * 1024 * 1024,
                                  &sconf(cmd)->mem_total);
}

static const char *set_notify(cmd_parms *cmd, void *dv, const char *arg)
{
    const char *err = main_server_only(cmd);
    if (err) {
        return err;
    }
    if (!strcasecmp(arg, "auto")) {
        sconf(cmd)->notify = 1;
    }
    else if (!strcasecmp(arg, "poll")) {
        sconf(cmd)->notify = 0;
    }
    else {
        return "FHCacheNotify: use 'auto' (change notification, stat polling "
               "where unavailable) or 'poll' (stat polling only)";
    }
    return NULL;
}

const command_rec fhc_cmds[] = {
    AP_INIT_FLAG("FHCache", set_enable, NULL, RSRC_CONF | ACCESS_CONF,
                 "On: serve static files of this scope from the per-child "
                 "file-handle cache (default Off)"),
    AP_INIT_TAKE1("FHCacheMaxEntries", set_max_entries, NULL, RSRC_CONF,
                  "Files cached per child (default 4096)"),
    AP_INIT_TAKE1("FHCacheMaxDescriptors", set_max_fds, NULL, RSRC_CONF,
                  "Open descriptors held per child, or 'auto' (default: a "
                  "quarter of RLIMIT_NOFILE)"),
    AP_INIT_TAKE1("FHCacheIdleTimeout", set_idle, NULL, RSRC_CONF,
                  "Seconds an unused entry is kept (default 60; 0: forever)"),
    AP_INIT_TAKE1("FHCacheMinUses", set_min_uses, NULL, RSRC_CONF,
                  "Requests for a file before it is cached (default 1)"),
    AP_INIT_TAKE1("FHCacheMemoryFileMax", set_mem_file, NULL, RSRC_CONF,
                  "Files up to this size are served from memory (default 16K; "
                  "0: never)"),
    AP_INIT_TAKE1("FHCacheMemoryTotal", set_mem_total, NULL, RSRC_CONF,
                  "Memory for cached bodies per child (default 16M)"),
    AP_INIT_TAKE1("FHCacheRevalidate", set_revalidate, NULL, RSRC_CONF,
                  "Seconds between stat checks of a cached file (default: "
                  "every request where no change notification watches it)"),
    AP_INIT_TAKE1("FHCacheNotify", set_notify, NULL, RSRC_CONF,
                  "auto (default) or poll"),
    AP_INIT_TAKE1("FHCacheMaxWatches", set_max_watches, NULL, RSRC_CONF,
                  "Directories watched per child (default 1024)"),
    { NULL }
};

int fhc_pre_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp)
{
    fhc_any_enabled = 0;    /* the configuration is read again on restart */
    return OK;
}

int fhc_post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                    server_rec *s)
{
    fhc_server_conf *c = ap_get_module_config(s->module_config, &fhcache_module);
    unsigned budget = fhc_os_handle_budget();

    if (c->max_fds != FHC_UNSET && (unsigned)c->max_fds > budget) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     "mod_fhcache: FHCacheMaxDescriptors %d is more than "
                     "%u (%s); using %u", c->max_fds, budget,
                     fhc_os_hint_budget, budget);
        c->max_fds = (int)budget;
    }
    if (c->mem_file_max > c->mem_total) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     "mod_fhcache: FHCacheMemoryFileMax is larger than "
                     "FHCacheMemoryTotal; files above %" APR_OFF_T_FMT
                     " bytes will be served from descriptors", c->mem_total);
        c->mem_file_max = c->mem_total;
    }
    if (fhc_any_enabled) {
        fhc_tally_setup(pconf, s);
    }
    return OK;
}

void fhc_conf_limits(const fhc_server_conf *c, unsigned max_fds,
                     fhc_limits *out)
{
    out->max_entries = (unsigned)c->max_entries;
    out->max_handles = max_fds;
    out->max_bytes = (uint64_t)c->mem_total;
    out->idle_usec = (int64_t)c->idle_secs * APR_USEC_PER_SEC;
    out->min_uses = (unsigned)c->min_uses;
}


unsigned fhc_conf_max_fds(const fhc_server_conf *c)
{
    unsigned budget = fhc_os_handle_budget();
    if (c->max_fds == FHC_UNSET) {
        return budget;
    }
    return (unsigned)c->max_fds < budget ? (unsigned)c->max_fds : budget;
}

apr_interval_time_t fhc_conf_revalidate_every(const fhc_server_conf *c,
                                              int watched)
{
    if (c->revalidate_secs != FHC_UNSET) {
        return apr_time_from_sec(c->revalidate_secs);
    }
    return watched ? apr_time_from_sec(DEF_REVALIDATE_WATCHED_SECS) : 0;
}

const char *fhc_conf_revalidate_words(const fhc_server_conf *c, int watched,
                                      apr_pool_t *p)
{
    apr_interval_time_t every = fhc_conf_revalidate_every(c, watched);
    return every ? apr_psprintf(p, "every %d s", (int)apr_time_sec(every))
                 : "on every request";
}
