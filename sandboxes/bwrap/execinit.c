/* execinit: one exec's pid namespace, native (docket's bwrap exec service, `execd.py`).
 *
 * The exec service spawns this program (posix_spawn: no copy of the service's interpreter)
 * for every exec it prepares. It does what execd.py's Python path does with forks of the
 * service, step for step and with the same status lines:
 *
 *   helper   unshare(CLONE_NEWPID), fork the namespace's init, write "init PID", exit;
 *   init     pid 1: a mount namespace and /proc of its own, fork the command, reap it, then
 *            SIGKILL and reap everything else in the namespace and send `exit` on docket's
 *            channel itself (a detached exec's init reaps until its namespace is empty);
 *   command  setsid, default signals, rlimits (soft = hard), no capabilities (ambient,
 *            bounding, effective, permitted, inheritable), no_new_privs, the seccomp
 *            programs; then it waits for its request, sets oom_score_adj=1000, joins the
 *            agent's cgroup, takes its pipes and cwd and execve's (or runs a file builtin).
 *
 * Usage: execinit CONFIG_FD STATUS_FD REQUEST_FD CHANNEL_FD AGENT_CGROUP_FD (-1: none);
 *        execinit --check (exits 0: the service's probe that this binary runs here).
 * CONFIG_FD holds the limits (see execd.native_config); the request arrives on REQUEST_FD as
 * a 4-byte native-endian length and NUL-terminated fields (see execd.native_request), with
 * the command's stdin/stdout/stderr attached (SCM_RIGHTS).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

/* The prepared command's fds: its failure pipe to the init, its request socket, and (with a
 * cgroup) the agent cgroup's cgroup.procs. */
enum { REPORT_FD = 3, REQUEST_FD = 4, AGENT_CGROUP_FD = 5 };
/* Exit codes of a builtin file operation (execd.BUILTIN_FAILED, execd.FILE_TOO_LARGE). */
enum { BUILTIN_FAILED = 3, FILE_TOO_LARGE = 4 };
#define MAX_REQUEST (64u << 20)
#define MAX_FIELDS (1u << 22)

struct rlimit_entry {
    int resource;
    int64_t value;
    const char *name;
};

struct program {
    uint32_t bytes;
    const unsigned char *code;
};

struct config {
    uint32_t n_bounding;
    uint32_t *caps;
    uint32_t n_rlimits;
    struct rlimit_entry *rlimits;
    uint32_t n_programs;
    struct program *programs;
    int has_tools;
    uint64_t tools_dev, tools_ino;
};

struct request {
    long id;
    int detached;
    int valid; /* 0: runs; 1: execve would refuse its argv/env (EIO); 2: no usable cwd */
    char *cwd;
    char *builtin;
    char **argv;
    char **env;
    char **args;
    size_t n_argv, n_args;
};

/* -- small helpers -------------------------------------------------------------------------- */

static void write_all(int fd, const char *data, size_t size) {
    while (size > 0) {
        ssize_t done = write(fd, data, size);
        if (done < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        data += done;
        size -= (size_t)done;
    }
}

/* Python's OSError subclass for an errno (the class name the Python path reports). */
static const char *error_class(int code) {
    switch (code) {
    case EAGAIN:
    case EALREADY:
    case EINPROGRESS:
        return "BlockingIOError";
    case ECHILD:
        return "ChildProcessError";
    case EPIPE:
    case ESHUTDOWN:
        return "BrokenPipeError";
    case EEXIST:
        return "FileExistsError";
    case ENOENT:
        return "FileNotFoundError";
    case EISDIR:
        return "IsADirectoryError";
    case ENOTDIR:
        return "NotADirectoryError";
    case EINTR:
        return "InterruptedError";
    case EACCES:
    case EPERM:
        return "PermissionError";
    case ESRCH:
        return "ProcessLookupError";
    case ETIMEDOUT:
        return "TimeoutError";
    default:
        return "OSError";
    }
}

/* errnos that mean a kernel resource ran out (for now): that exec fails alone (`busy`). */
static int resource_errno(int code) {
    return code == EAGAIN || code == ENOMEM || code == EMFILE || code == ENFILE ||
           code == ENOSPC || code == ETOOMANYREFS;
}

/* Report a failed setup step in one line (as execd._setup_failure words it), then exit. */
__attribute__((noreturn)) static void fail(int fd, const char *step, const char *what, int code) {
    char line[1024];
    int size;
    if (what)
        size = snprintf(line, sizeof line, "%s %s: %s: [Errno %d] %s: %s\n",
                        resource_errno(code) ? "busy" : "setup", step, error_class(code), code,
                        what, strerror(code));
    else
        size = snprintf(line, sizeof line, "%s %s: %s: [Errno %d] %s\n",
                        resource_errno(code) ? "busy" : "setup", step, error_class(code), code,
                        strerror(code));
    if (size > 0)
        write_all(fd, line, (size_t)size < sizeof line ? (size_t)size : sizeof line - 1);
    _exit(127);
}

static int parse_fd(const char *text) {
    char *end;
    long value = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || value < -1 || value > 1 << 20)
        _exit(2);
    return (int)value;
}

static void close_from(int first) {
    if (syscall(SYS_close_range, (unsigned)first, ~0u, 0) == 0)
        return;
    for (int fd = first; fd < 65536; fd++)
        close(fd);
}

/* Close every fd from 3 up but `keep` (sorted ascending, each >= 3). */
static void close_all_but(const int *keep, size_t count) {
    int next = 3;
    for (size_t i = 0; i < count; i++) {
        if (keep[i] < next)
            continue;
        if (keep[i] > next)
            syscall(SYS_close_range, (unsigned)next, (unsigned)keep[i] - 1, 0);
        next = keep[i] + 1;
    }
    close_from(next);
}

static void reset_signals(int ignore_pipe) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    for (int number = 1; number < NSIG; number++) {
        if (number == SIGKILL || number == SIGSTOP)
            continue;
        action.sa_handler = (ignore_pipe && number == SIGPIPE) ? SIG_IGN : SIG_DFL;
        sigaction(number, &action, NULL); /* EINVAL for glibc's reserved ones: skipped */
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* -- the limits (CONFIG_FD) ---------------------------------------------------------------- */

struct reader {
    const unsigned char *data;
    size_t size, at;
    int ok;
};

static const unsigned char *take(struct reader *r, size_t size) {
    if (!r->ok || size > r->size - r->at) {
        r->ok = 0;
        return NULL;
    }
    const unsigned char *here = r->data + r->at;
    r->at += size;
    return here;
}

static uint32_t take_u32(struct reader *r) {
    uint32_t value = 0;
    const unsigned char *p = take(r, 4);
    if (p)
        memcpy(&value, p, 4);
    return value;
}

static uint64_t take_u64(struct reader *r) {
    uint64_t value = 0;
    const unsigned char *p = take(r, 8);
    if (p)
        memcpy(&value, p, 8);
    return value;
}

static unsigned char *read_fd(int fd, size_t *size) {
    struct stat info;
    if (fstat(fd, &info) != 0 || info.st_size < 0 || info.st_size > (1 << 24))
        return NULL;
    unsigned char *data = malloc((size_t)info.st_size + 1);
    size_t have = 0;
    while (data && have < (size_t)info.st_size) {
        ssize_t got = pread(fd, data + have, (size_t)info.st_size - have, (off_t)have);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return NULL;
        have += (size_t)got;
    }
    *size = have;
    return data;
}

/* Layout (native endian): "DKX1", u32 n + n u32 capabilities (the bounding set to drop),
 * u32 n + n (u32 resource, i64 value, u32 length, name), u32 n + n (u32 length, BPF code),
 * u32 has_tools, u64 st_dev, u64 st_ino (the sealed tool-support launcher). */
static int load_config(int fd, struct config *config) {
    size_t size = 0;
    unsigned char *data = read_fd(fd, &size);
    if (!data)
        return -1;
    struct reader r = {data, size, 0, 1};
    const unsigned char *magic = take(&r, 4);
    if (!magic || memcmp(magic, "DKX1", 4) != 0)
        return -1;
    config->n_bounding = take_u32(&r);
    if (config->n_bounding > 64)
        return -1;
    config->caps = calloc(config->n_bounding + 1, sizeof *config->caps);
    for (uint32_t i = 0; config->caps && i < config->n_bounding; i++)
        config->caps[i] = take_u32(&r);
    config->n_rlimits = take_u32(&r);
    if (config->n_rlimits > 64)
        return -1;
    config->rlimits = calloc(config->n_rlimits + 1, sizeof *config->rlimits);
    for (uint32_t i = 0; config->rlimits && i < config->n_rlimits; i++) {
        config->rlimits[i].resource = (int)take_u32(&r);
        config->rlimits[i].value = (int64_t)take_u64(&r);
        uint32_t length = take_u32(&r);
        const unsigned char *name = take(&r, length);
        char *copy = malloc((size_t)length + 1);
        if (!name || !copy)
            return -1;
        memcpy(copy, name, length);
        copy[length] = '\0';
        config->rlimits[i].name = copy;
    }
    config->n_programs = take_u32(&r);
    if (config->n_programs > 16)
        return -1;
    config->programs = calloc(config->n_programs + 1, sizeof *config->programs);
    for (uint32_t i = 0; config->programs && i < config->n_programs; i++) {
        uint32_t bytes = take_u32(&r);
        const unsigned char *code = take(&r, bytes);
        if (!code || bytes % sizeof(struct sock_filter) != 0 ||
            bytes / sizeof(struct sock_filter) > BPF_MAXINSNS)
            return -1;
        unsigned char *aligned = malloc(bytes ? bytes : 1);
        if (!aligned)
            return -1;
        memcpy(aligned, code, bytes);
        config->programs[i].bytes = bytes;
        config->programs[i].code = aligned;
    }
    config->has_tools = (int)take_u32(&r);
    config->tools_dev = take_u64(&r);
    config->tools_ino = take_u64(&r);
    if (!r.ok || r.at != r.size || !config->caps || !config->rlimits || !config->programs)
        return -1;
    return 0;
}

/* -- the request (REQUEST_FD) -------------------------------------------------------------- */

static int recv_exact(int sock, unsigned char *buffer, size_t size, int *fds, size_t *n_fds) {
    size_t have = 0;
    while (have < size) {
        union {
            struct cmsghdr header;
            char space[CMSG_SPACE(3 * sizeof(int))];
        } control;
        struct iovec io = {buffer + have, size - have};
        struct msghdr message;
        memset(&message, 0, sizeof message);
        message.msg_iov = &io;
        message.msg_iovlen = 1;
        message.msg_control = control.space;
        message.msg_controllen = sizeof control.space;
        ssize_t got = recvmsg(sock, &message, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -1;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < count; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (*n_fds < 3)
                    fds[(*n_fds)++] = fd;
                else
                    close(fd);
            }
        }
        if (got == 0)
            return -1;
        have += (size_t)got;
    }
    return 0;
}

struct fields {
    char *at, *end;
    int ok;
};

static char *next_field(struct fields *f) {
    if (!f->ok || f->at >= f->end) {
        f->ok = 0;
        return NULL;
    }
    char *field = f->at;
    char *nul = memchr(f->at, '\0', (size_t)(f->end - f->at));
    if (!nul) {
        f->ok = 0;
        return NULL;
    }
    f->at = nul + 1;
    return field;
}

static size_t next_count(struct fields *f) {
    char *text = next_field(f);
    char *end;
    if (!text)
        return 0;
    unsigned long value = strtoul(text, &end, 10);
    if (*text == '\0' || *end != '\0' || value > MAX_FIELDS) {
        f->ok = 0;
        return 0;
    }
    return (size_t)value;
}

static char **next_list(struct fields *f, size_t *count) {
    size_t n = next_count(f);
    char **list = calloc(n + 1, sizeof *list);
    if (!list) {
        f->ok = 0;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        list[i] = next_field(f);
    if (count)
        *count = n;
    return list;
}

/* Fields, each NUL-terminated: id, detached, valid, cwd, builtin, argc, argv..., envc,
 * env (KEY=VALUE)..., argc of the builtin, its args... */
static int read_request(int sock, struct request *request, int *fds, size_t *n_fds) {
    uint32_t length;
    if (recv_exact(sock, (unsigned char *)&length, sizeof length, fds, n_fds) != 0)
        return -1;
    if (length > MAX_REQUEST)
        return -1;
    char *body = malloc((size_t)length + 1);
    if (!body || recv_exact(sock, (unsigned char *)body, length, fds, n_fds) != 0)
        return -1;
    body[length] = '\0';
    struct fields f = {body, body + length, 1};
    char *id = next_field(&f), *detached = next_field(&f), *valid = next_field(&f);
    request->cwd = next_field(&f);
    request->builtin = next_field(&f);
    request->argv = next_list(&f, &request->n_argv);
    request->env = next_list(&f, NULL);
    request->args = next_list(&f, &request->n_args);
    if (!f.ok || f.at != f.end)
        return -1;
    request->id = strtol(id, NULL, 10);
    request->detached = strcmp(detached, "1") == 0;
    request->valid = atoi(valid);
    return 0;
}

/* -- builtin file operations (execd._builtin) ---------------------------------------------- */

static void json_string(char *out, size_t room, const char *text) {
    size_t at = 0;
    out[at++] = '"';
    for (; *text && at + 8 < room; text++) {
        unsigned char c = (unsigned char)*text;
        if (c == '"' || c == '\\') {
            out[at++] = '\\';
            out[at++] = (char)c;
        } else if (c < 0x20) {
            at += (size_t)snprintf(out + at, room - at, "\\u%04x", c);
        } else {
            out[at++] = (char)c;
        }
    }
    out[at++] = '"';
    out[at] = '\0';
}

static int builtin_error(int code, const char *message) {
    char quoted[600], line[700];
    json_string(quoted, sizeof quoted, message ? message : strerror(code));
    int size = snprintf(line, sizeof line, "{\"errno\": %d, \"message\": %s}", code, quoted);
    if (size > 0)
        write_all(2, line, (size_t)size < sizeof line ? (size_t)size : sizeof line - 1);
    return BUILTIN_FAILED;
}

/* 0, or the builtin's failure (a directory, or not a regular file). */
static int not_regular(mode_t mode) {
    if (S_ISDIR(mode))
        return builtin_error(EISDIR, "Is a directory");
    if (!S_ISREG(mode)) {
        const char *kind = S_ISFIFO(mode) ? "FIFO" : S_ISSOCK(mode) ? "socket" : "device";
        char message[64];
        snprintf(message, sizeof message, "not a regular file (%s)", kind);
        return builtin_error(EPERM, message);
    }
    return 0;
}

static int set_blocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

/* Copy `from` to `to` until end of file; 0, or the errno. */
static int copy_all(int from, int to) {
    static char chunk[1 << 16];
    for (;;) {
        ssize_t got = read(from, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return errno;
        if (got == 0)
            return 0;
        for (ssize_t done = 0; done < got;) {
            ssize_t put = write(to, chunk + done, (size_t)(got - done));
            if (put < 0 && errno == EINTR)
                continue;
            if (put < 0)
                return errno;
            done += put;
        }
    }
}

static int is_dir(const char *path) {
    struct stat info;
    return stat(path, &info) == 0 && S_ISDIR(info.st_mode);
}

/* os.makedirs(path, exist_ok=True); 0, or the errno. */
static int make_dirs(char *path) {
    size_t length = strlen(path);
    for (size_t i = 1; i <= length; i++) {
        if ((i < length && path[i] != '/') || path[i - 1] == '/')
            continue;
        char saved = path[i];
        path[i] = '\0';
        struct stat info;
        int code = 0;
        if (stat(path, &info) == 0) {
            if (i == length && !S_ISDIR(info.st_mode))
                code = EEXIST; /* the last one must be a directory */
        } else if (mkdir(path, 0777) != 0) {
            code = errno;
            if (code == EEXIST && (i < length || is_dir(path)))
                code = 0; /* made meanwhile */
        }
        path[i] = saved;
        if (code)
            return code;
    }
    return 0;
}

static int builtin_read(struct request *request) {
    const char *path = request->args[0];
    char *end;
    long long limit = strtoll(request->args[1], &end, 10);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return builtin_error(errno, NULL);
    struct stat info;
    if (fstat(fd, &info) != 0)
        return builtin_error(errno, NULL);
    int failed = not_regular(info.st_mode);
    if (failed)
        return failed;
    if ((long long)info.st_size > limit)
        return FILE_TOO_LARGE;
    if (set_blocking(fd) != 0)
        return builtin_error(errno, NULL);
    int code = copy_all(fd, 1);
    return code ? builtin_error(code, NULL) : 0;
}

static int builtin_write(struct request *request) {
    const char *path = request->args[0];
    char *parent = strdup(path);
    char *slash = parent ? strrchr(parent, '/') : NULL;
    if (slash) { /* os.path.dirname: up to the last slash, trailing slashes dropped */
        while (slash > parent && slash[-1] == '/')
            slash--;
        slash[slash == parent ? 1 : 0] = '\0';
        if (!is_dir(parent)) {
            int code = make_dirs(parent);
            if (code)
                return builtin_error(code, NULL);
        }
    }
    int flags = O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    int fd = open(path, flags, 0644);
    if (fd < 0) {
        int code = errno;
        struct stat info;
        if (code == ENXIO) { /* a FIFO without a reader */
            if (stat(path, &info) != 0)
                return builtin_error(errno, NULL);
            int failed = not_regular(info.st_mode);
            if (failed)
                return failed;
        }
        return builtin_error(code, NULL);
    }
    struct stat info;
    if (fstat(fd, &info) != 0)
        return builtin_error(errno, NULL);
    int failed = not_regular(info.st_mode);
    if (failed)
        return failed;
    if (set_blocking(fd) != 0 || ftruncate(fd, 0) != 0)
        return builtin_error(errno, NULL);
    int code = copy_all(0, fd);
    return code ? builtin_error(code, NULL) : 0;
}

static int run_builtin(struct request *request) {
    /* past the file size limit a write fails with EFBIG, not a signal (as execd's Python) */
    signal(SIGXFSZ, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    if (strcmp(request->builtin, "read") == 0) {
        if (request->n_args < 2)
            _exit(127);
        return builtin_read(request);
    }
    if (strcmp(request->builtin, "write") == 0) {
        if (request->n_args < 1)
            _exit(127);
        return builtin_write(request);
    }
    char message[300];
    snprintf(message, sizeof message, "unknown builtin %.200s", request->builtin);
    return builtin_error(EINVAL, message);
}

/* -- the command (pid 2) ------------------------------------------------------------------- */

static void report_error(int code) {
    char line[32];
    int size = snprintf(line, sizeof line, "error %d\n", code);
    write_all(REPORT_FD, line, (size_t)size);
    _exit(127);
}

/* os.execvpe over the request's own PATH (else os.defpath), with its choice of error. */
static void exec_search(char **argv, char **env) {
    const char *file = argv[0];
    if (strchr(file, '/')) {
        execve(file, argv, env);
        report_error(errno);
    }
    const char *path = "/bin:/usr/bin";
    for (char **entry = env; *entry; entry++)
        if (strncmp(*entry, "PATH=", 5) == 0)
            path = *entry + 5;
    int saved = 0, last = 0;
    size_t file_length = strlen(file);
    char *candidate = malloc(strlen(path) + file_length + 2);
    if (!candidate)
        report_error(ENOMEM);
    for (const char *dir = path;; dir++) {
        const char *colon = strchr(dir, ':');
        size_t length = colon ? (size_t)(colon - dir) : strlen(dir);
        size_t at = 0;
        if (length) {
            memcpy(candidate, dir, length);
            at = length;
            if (dir[length - 1] != '/')
                candidate[at++] = '/';
        }
        memcpy(candidate + at, file, file_length + 1);
        execve(candidate, argv, env);
        last = errno;
        if (last != ENOENT && last != ENOTDIR && !saved)
            saved = last;
        if (!colon)
            break;
        dir = colon;
    }
    report_error(saved ? saved : last ? last : ENOENT);
}

__attribute__((noreturn)) static void prepared_command(const struct config *config, int report_end,
                                                       int requests, int agent_cgroup) {
    int keep[3] = {report_end, requests, agent_cgroup};
    int count = agent_cgroup >= 0 ? 3 : 2, high[3];
    for (int i = 0; i < count; i++)
        if ((high[i] = fcntl(keep[i], F_DUPFD, 100)) < 0)
            _exit(127);
    for (int i = 0; i < count; i++)
        if (dup3(high[i], REPORT_FD + i, O_CLOEXEC) < 0)
            _exit(127);
    close_from(REPORT_FD + count);

    if (setsid() < 0)
        fail(REPORT_FD, "session", NULL, errno);
    reset_signals(0);
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) /* its own /proc/self */
        fail(REPORT_FD, "dumpable", "set dumpable", errno);
    for (uint32_t i = 0; i < config->n_rlimits; i++) {
        const struct rlimit_entry *entry = &config->rlimits[i];
        struct rlimit limit = {(rlim_t)entry->value, (rlim_t)entry->value};
        if (setrlimit(entry->resource, &limit) != 0) {
            struct rlimit current;
            long long hard = -1;
            if (getrlimit(entry->resource, &current) == 0 && current.rlim_max != RLIM_INFINITY)
                hard = (long long)current.rlim_max;
            char line[512];
            int size = snprintf(line, sizeof line,
                                "setup rlimits: ValueError: cannot set %s to %lld: the hard "
                                "limit docket runs under is %lld (lower the sandbox option, or "
                                "raise the evaluator's hard limit)\n",
                                entry->name, (long long)entry->value, hard);
            write_all(REPORT_FD, line, (size_t)size < sizeof line ? (size_t)size : sizeof line - 1);
            _exit(127);
        }
    }
    /* no capabilities (none inheritable, ambient or bounding), no_new_privs, then filters */
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0)
        fail(REPORT_FD, "privileges", "clear ambient caps", errno);
    for (uint32_t i = 0; i < config->n_bounding; i++) {
        if (prctl(PR_CAPBSET_DROP, config->caps[i], 0, 0, 0) != 0 && errno != EINVAL) {
            char what[64];
            snprintf(what, sizeof what, "drop capability %u from the bounding set",
                     config->caps[i]);
            fail(REPORT_FD, "privileges", what, errno);
        }
    }
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capset, &header, data) != 0)
        fail(REPORT_FD, "privileges", "capset", errno);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        fail(REPORT_FD, "privileges", "no_new_privs", errno);
    for (uint32_t i = 0; i < config->n_programs; i++) {
        struct sock_fprog program = {
            (unsigned short)(config->programs[i].bytes / sizeof(struct sock_filter)),
            (struct sock_filter *)config->programs[i].code};
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) != 0)
            fail(REPORT_FD, "privileges", "seccomp", errno);
    }

    struct request request;
    int fds[3];
    size_t n_fds = 0;
    memset(&request, 0, sizeof request);
    if (read_request(REQUEST_FD, &request, fds, &n_fds) != 0)
        _exit(0); /* the sandbox is ending */
    /* only now: a spare waiting for its request is not the OOM killer's choice */
    int adj = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (adj < 0)
        fail(REPORT_FD, "oom_score_adj", "/proc/self/oom_score_adj", errno);
    if (write(adj, "1000", 4) != 4)
        fail(REPORT_FD, "oom_score_adj", NULL, errno);
    close(adj);
    if (agent_cgroup >= 0) { /* into the agent's cgroup (its pids.max), out of the service's */
        if (write(AGENT_CGROUP_FD, "0", 1) != 1)
            fail(REPORT_FD, "agent cgroup", NULL, errno);
        close(AGENT_CGROUP_FD);
    }
    int launcher = -1; /* detached only for the sealed launcher itself, run through this fd */
    if (request.detached && request.n_argv > 0 && config->has_tools) {
        int fd = open(request.argv[0], O_RDONLY | O_CLOEXEC);
        struct stat info;
        if (fd >= 0 && fstat(fd, &info) == 0 && S_ISREG(info.st_mode) &&
            (uint64_t)info.st_dev == config->tools_dev &&
            (uint64_t)info.st_ino == config->tools_ino)
            launcher = fd;
        else if (fd >= 0)
            close(fd);
    }
    char line[64];
    int size = snprintf(line, sizeof line, "request %ld %d\n", request.id, launcher >= 0);
    write_all(REPORT_FD, line, (size_t)size);
    for (size_t i = 0; i < n_fds; i++)
        dup2(fds[i], (int)i);
    for (size_t i = 0; i < n_fds; i++) {
        int seen = fds[i] <= 2;
        for (size_t j = 0; j < i; j++)
            seen |= fds[j] == fds[i];
        if (!seen)
            close(fds[i]);
    }
    close(REQUEST_FD);
    if (request.valid == 2)
        _exit(127);
    if (chdir(request.cwd) != 0) {
        char message[1024];
        int length = snprintf(message, sizeof message, "cannot change directory to %.900s: %s\n",
                              request.cwd, strerror(errno));
        write_all(2, message, (size_t)length < sizeof message ? (size_t)length : sizeof message - 1);
        _exit(1);
    }
    if (request.builtin[0])
        _exit(run_builtin(&request));
    if (request.valid != 0 || request.n_argv == 0)
        report_error(EIO); /* what execve refuses before the kernel sees it (execd's EIO) */
    if (launcher >= 0) {
        fexecve(launcher, request.argv, request.env);
        report_error(errno);
    }
    exec_search(request.argv, request.env);
    _exit(127);
}

/* -- the namespace init (pid 1) ------------------------------------------------------------ */

static void send_exit(int channel, const char *body) {
    uint32_t length = (uint32_t)strlen(body);
    unsigned char frame[256];
    frame[0] = (unsigned char)(length >> 24);
    frame[1] = (unsigned char)(length >> 16);
    frame[2] = (unsigned char)(length >> 8);
    frame[3] = (unsigned char)length;
    memcpy(frame + 4, body, length);
    size_t size = 4 + length, done = 0;
    while (done < size) {
        ssize_t sent = send(channel, frame + done, size - done, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR)
            continue;
        if (sent < 0)
            return;
        done += (size_t)sent;
    }
}

static void reap_all(void) {
    for (;;) {
        if (wait(NULL) < 0 && errno != EINTR)
            return;
    }
}

/* The value of the last `key` line in `text` (as execd's init reads the command's report). */
static const char *report_value(char *text, const char *key) {
    const char *found = NULL;
    size_t key_length = strlen(key);
    for (char *line = text; line && *line;) {
        char *end = strchr(line, '\n');
        if (strncmp(line, key, key_length) == 0 &&
            (line[key_length] == ' ' || line[key_length] == '\n' || line[key_length] == '\0'))
            found = line[key_length] == ' ' ? line + key_length + 1 : line + key_length;
        line = end ? end + 1 : NULL;
    }
    return found;
}

static void put_line(int fd, const char *kind, const char *value) {
    const char *end = strchr(value, '\n');
    size_t length = end ? (size_t)(end - value) : strlen(value);
    char line[1200];
    int size = snprintf(line, sizeof line, "%s %.*s\n", kind, (int)(length < 1100 ? length : 1100),
                        value);
    write_all(fd, line, (size_t)size);
}

__attribute__((noreturn)) static void namespace_init(const struct config *config, int status_fd,
                                                     int requests, int channel,
                                                     int agent_cgroup) {
    if (unshare(CLONE_NEWNS) != 0)
        fail(status_fd, "proc", "unshare mount namespace", errno);
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
        fail(status_fd, "proc", "mount /proc", errno);
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0)
        fail(status_fd, "fork the command", NULL, errno);
    pid_t command = fork();
    if (command < 0)
        fail(status_fd, "fork the command", NULL, errno);
    if (command == 0) {
        close(report[0]);
        prepared_command(config, report[1], requests, agent_cgroup);
    }
    close(report[1]);
    close(requests);
    if (agent_cgroup >= 0)
        close(agent_cgroup); /* only its command needs it, once */
    int status = 0;
    for (;;) {
        int got;
        pid_t pid = wait(&got);
        if (pid < 0 && errno == EINTR)
            continue;
        if (pid < 0)
            _exit(0);
        if (pid == command) {
            status = got;
            break;
        }
    }
    size_t have = 0, room = 4096;
    char *text = malloc(room);
    for (;;) {
        if (!text)
            _exit(0);
        if (room - have < 1024)
            text = realloc(text, room *= 2);
        if (!text)
            _exit(0);
        ssize_t got = read(report[0], text + have, room - have - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        have += (size_t)got;
    }
    text[have] = '\0';
    close(report[0]);
    const char *requested = report_value(text, "request");
    if (!requested) { /* it never got a request: it failed to get ready, or we end */
        const char *busy = report_value(text, "busy");
        const char *setup = report_value(text, "setup");
        const char *kind = busy ? "busy" : "setup";
        const char *reason = busy ? busy : setup;
        put_line(status_fd, kind, reason ? reason : "the prepared command ended before its request");
        _exit(0);
    }
    long id = strtol(requested, NULL, 10);
    const char *space = strchr(requested, ' ');
    int detached = space && space[1] == '1';
    char line[64];
    int size = snprintf(line, sizeof line, "exit %d\n", status);
    write_all(status_fd, line, (size_t)size);
    if (!detached) { /* kill every other process in the namespace and reap them all */
        kill(-1, SIGKILL);
        reap_all();
    }
    char body[160];
    const char *error = report_value(text, "error");
    if (error)
        snprintf(body, sizeof body, "{\"op\":\"exit\",\"id\":%ld,\"error\":%ld}", id,
                 strtol(error, NULL, 10));
    else if (WIFSIGNALED(status))
        snprintf(body, sizeof body, "{\"op\":\"exit\",\"id\":%ld,\"signal\":%d}", id,
                 WTERMSIG(status));
    else
        snprintf(body, sizeof body, "{\"op\":\"exit\",\"id\":%ld,\"code\":%d}", id,
                 WEXITSTATUS(status));
    write_all(status_fd, "reported\n", 9);
    send_exit(channel, body);
    if (detached)
        reap_all(); /* until nothing is left (the sandbox's end kills the rest) */
    _exit(0);
}

/* -- the helper ---------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    /* first: as the service it came from, nothing else of the sandbox may trace or read it */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        return 2;
    if (argc == 2 && strcmp(argv[1], "--check") == 0)
        return 0;
    if (argc != 6)
        return 2;
    int config_fd = parse_fd(argv[1]), status_fd = parse_fd(argv[2]);
    int requests = parse_fd(argv[3]), channel = parse_fd(argv[4]);
    int agent_cgroup = parse_fd(argv[5]);
    if (config_fd < 3 || status_fd < 3 || requests < 3 || channel < 3)
        return 2;
    int keep[5] = {config_fd, status_fd, requests, channel, agent_cgroup};
    for (int i = 1; i < 5; i++) /* sorted, for close_all_but */
        for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
            int swap = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = swap;
        }
    close_all_but(keep, 5);
    reset_signals(1);
    struct config config;
    memset(&config, 0, sizeof config);
    if (load_config(config_fd, &config) != 0) {
        const char line[] = "setup pid namespace: ValueError: unreadable exec limits\n";
        write_all(status_fd, line, sizeof line - 1);
        _exit(127);
    }
    close(config_fd);
    if (unshare(CLONE_NEWPID) != 0)
        fail(status_fd, "pid namespace", "unshare pid namespace", errno);
    pid_t init = fork();
    if (init < 0)
        fail(status_fd, "pid namespace", NULL, errno);
    if (init == 0)
        namespace_init(&config, status_fd, requests, channel, agent_cgroup);
    char line[32];
    int size = snprintf(line, sizeof line, "init %d\n", (int)init);
    write_all(status_fd, line, (size_t)size);
    _exit(0);
}
