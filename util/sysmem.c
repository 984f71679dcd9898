/* util/sysmem.c: how much memory this process's node and control group have left (see sysmem.h).
 *
 * Two limits can end a run: the machine's memory (the kernel's OOM killer), and the memory
 * control group a batch system puts the job in (Slurm's --mem: cgroup v2 memory.max, or v1
 * memory.limit_in_bytes), which kills inside the group long before the machine is full. The page
 * cache counts in a group's usage but is given back under pressure, so the group's working set
 * is its usage less its inactive file pages (what container runtimes watch for the same reason). */
#include "sysmem.h"

#include <stdio.h>
#include <string.h>

/* the first number after key in a "key value" file (meminfo's kB lines, memory.stat) */
static int read_key(const char *path, const char *key, unsigned long long *v)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[256];
    size_t n = strlen(key);
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0 && (line[n] == ' ' || line[n] == ':' || line[n] == '\t'))
            found = sscanf(line + n + 1, " %llu", v) == 1;
    fclose(f);
    return found;
}

static int read_number(const char *path, unsigned long long *v)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char s[64] = "";
    int ok = fgets(s, sizeof s, f) != NULL;
    fclose(f);
    if (!ok) return 0;
    if (strncmp(s, "max", 3) == 0) return 0; /* v2: no limit */
    return sscanf(s, "%llu", v) == 1;
}

/* This process's memory group: its directory, v2 (0::/path) or v1 (N:memory:/path). */
static int cgroup_dir(char *dir, size_t cap, int *v2)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return 0;
    char line[1024], v1path[1024] = "", v2path[1024] = "";
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, "0::", 3) == 0) snprintf(v2path, sizeof v2path, "%s", line + 3);
        char *m = strstr(line, ":memory:");
        if (m) snprintf(v1path, sizeof v1path, "%s", m + 8);
    }
    fclose(f);
    if (v1path[0]) { /* a v1 memory controller is mounted for this process: it is the one that limits */
        *v2 = 0;
        snprintf(dir, cap, "/sys/fs/cgroup/memory%s", v1path);
        return 1;
    }
    if (v2path[0]) {
        *v2 = 1;
        snprintf(dir, cap, "/sys/fs/cgroup%s", v2path);
        return 1;
    }
    return 0;
}

/* The group's limit and working set, where a limit is set. */
static void cgroup_memory(nst_sysmem *m)
{
    char dir[1100], path[1200];
    int v2;
    if (!cgroup_dir(dir, sizeof dir, &v2)) return;
    unsigned long long limit = 0, usage = 0, inactive = 0;
    snprintf(path, sizeof path, "%s/%s", dir, v2 ? "memory.max" : "memory.limit_in_bytes");
    if (!read_number(path, &limit) || limit >= (1ull << 60)) return; /* v1's "no limit" is near 2^63 */
    snprintf(path, sizeof path, "%s/%s", dir, v2 ? "memory.current" : "memory.usage_in_bytes");
    if (!read_number(path, &usage)) return;
    snprintf(path, sizeof path, "%s/memory.stat", dir);
    if (!read_key(path, v2 ? "inactive_file" : "total_inactive_file", &inactive)) inactive = 0;
    m->group_limit = (size_t)limit;
    m->group_used = (size_t)(usage > inactive ? usage - inactive : 0);
    snprintf(m->group, sizeof m->group, "%.255s", dir);
}

void nst_sysmem_read(nst_sysmem *m)
{
    memset(m, 0, sizeof *m);
    unsigned long long kb;
    if (read_key("/proc/meminfo", "MemTotal", &kb)) m->total = (size_t)kb << 10;
    if (read_key("/proc/meminfo", "MemAvailable", &kb)) m->available = (size_t)kb << 10;
    cgroup_memory(m);
    m->headroom = m->available;
    if (m->group_limit) {
        size_t left = m->group_limit > m->group_used ? m->group_limit - m->group_used : 0;
        if (left < m->headroom || !m->available) m->headroom = left;
    }
}
