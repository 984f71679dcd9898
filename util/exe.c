/* util/exe.c: the running program's own folder (exe.h). */
#include "exe.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int nst_exe_dir(char *out, size_t cap)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (cap) out[0] = '\0';
    if (n <= 0) return -1;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return -1;
    *slash = '\0';
    if ((size_t)snprintf(out, cap, "%s", exe) >= cap) {
        if (cap) out[0] = '\0';
        return -1;
    }
    return 0;
}
