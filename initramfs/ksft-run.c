// SPDX-License-Identifier: GPL-2.0
/*
 * ksft-run: kselftest's runner.sh run_many in one process, as lib.mk's
 * run_tests uses it:
 *
 *   cd /selftests/COLLECTION && BASE_DIR=/selftests ksft-run TEST...
 *
 * prints what 'BASE_DIR=/selftests; . runner.sh; run_many TEST...' prints
 * (tools/testing/selftests/kselftest/runner.sh, 6.1), byte for byte: "TAP
 * version 13", "1..N", then for each TEST a "# selftests: DIR: NAME"
 * header, its output (stdout and stderr through one pipe, each line
 * prefixed "# " as prefix.pl does) and its "ok", "ok ... # SKIP" (exit 4),
 * "not ok ... # TIMEOUT T seconds" (exit 124, or timed out) or "not ok ...
 * # exit=RC" (another exit status; 128+S for a death by signal S) line.
 * The timeout is 45 seconds or that of the last "timeout=" line of
 * $BASE_DIR/DIR/settings (0: none); the test's arguments are those of
 * $KSELFTEST_<NAME>_ARGS; a TEST that is not executable but starts with
 * "#!" is run with that interpreter (and no arguments).  What runner.sh's
 * timeouts and shell print on the way reaches the output here too: GNU
 * timeout's "invalid time interval" and "failed to run command" (as in the
 * C locale), the shell's "Terminated" or "Killed" for a test that died of
 * that signal.  The test's environment is the one runner.sh gives it:
 * skip_rc, timeout_rc, logfile, per_test_logging, kselftest_timeout and
 * kselftest_default_timeout as runner.sh exports them, PWD and OLDPWD as
 * its shell's cd does, and BASE_DIR, a shell variable there, taken away.
 *
 * Under TCG with a lockdep kernel every fork and exec in the guest costs 3
 * to 6 ms, and runner.sh spends some 25 forks and 12 execs on each test
 * program (basename, tr, the settings loop's echo, grep and cut, sed or
 * perl for the prefix, subshells, two nested timeouts): 0.12 to 0.23 s per
 * program.  This is one fork and one exec per program.
 *
 * runner.sh's 'timeout --foreground T timeout T ./NAME' is done here: the
 * test runs in a process group of its own, which gets SIGTERM (and
 * SIGCONT) at the deadline; the verdict is then 124.  Where runner.sh
 * would wait forever, this does not, and differs:
 *  - GNU's timeout waits for as long as the test ignores SIGTERM; this
 *    sends the group SIGKILL KILL_GRACE seconds after the SIGTERM.
 *  - The deadline covers the reading of the output until EOF too: a test
 *    that ended leaving a child that holds the pipe, which runner.sh's
 *    prefixing would wait for as long as that child lives, has its group
 *    signalled at the deadline and times out.  What holds the pipe
 *    KILL_GRACE seconds after the SIGKILL is out of the group (a
 *    kselftest_harness.h case calls setpgrp(), a daemon setsid()): the
 *    rest of the output is given up then, and the verdict is the timeout.
 *  - A settings value is taken as it is written: runner.sh evals it (so
 *    "timeout=300 # note" or a quoted value work there, and are "invalid
 *    time interval" here).  A settings file that exists and cannot be
 *    read is an error of ksft-run's; runner.sh goes on without it.
 * And its own output is written to fd 1 only: runner.sh's prefixed lines go
 * through a second open of /dev/stdout (O_APPEND), and with a stdout that
 * is a regular file not opened for appending, its "ok" lines overwrite
 * them.
 *
 * SIGINT, SIGTERM, SIGHUP and SIGQUIT to ksft-run are passed on to the
 * running test's group (as the two timeouts do) and then end ksft-run with
 * the same signal.  ksft-run exits 0 when it ran every test, whatever their
 * verdicts (as run_many returns 0), 1 when BASE_DIR is unset or it could
 * not do its own part (a fork, a pipe, a settings file, its output).
 *
 * The harness builds it static, per arch (harness/initramfs.py), and runs it
 * on the host beside the recorded runner.sh (harness/tests/test_ksft_run.py).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#define DEFAULT_TIMEOUT	"45"	/* runner.sh's kselftest_default_timeout */
#define KSFT_SKIP	4
#define EXIT_TIMEDOUT	124
#define EXIT_CANCELED	125	/* GNU timeout's own failure */
#define EXIT_CANNOT_RUN	126
#define EXIT_NOT_FOUND	127

/* Seconds from the timeout's SIGTERM to the group's SIGKILL. */
#ifndef KILL_GRACE
#define KILL_GRACE	10
#endif

/* What GNU's timeout calls itself in its messages: runner.sh's argv[0]. */
#define TIMEOUT_NAME	"/usr/bin/timeout"

#define IFS		" \t\n"

static const int passed_on[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };

static const char *base_dir;
static char *dir_pwd;		/* the shell's $PWD */
static char *dir;		/* $PWD without "$BASE_DIR/" */
static sigset_t orig_mask;	/* ksft-run's at start, the tests' too */
static volatile pid_t test_pgid;	/* the running test's group */

struct words {
	char **v;
	size_t n, size;
};

static void fail(const char *fmt, ...)
{
	va_list ap;
	pid_t pgid = test_pgid;

	/* Not a test left running on its own: its verdict would be lost. */
	if (pgid > 0)
		kill(-pgid, SIGKILL);
	fputs("ksft-run: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p)
		fail("out of memory");
	return p;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		fail("out of memory");
	return p;
}

static int xvasprintf(char **s, const char *fmt, va_list ap)
{
	int n = vasprintf(s, fmt, ap);

	if (n < 0)
		fail("out of memory");
	return n;
}

static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	xvasprintf(&s, fmt, ap);
	va_end(ap);
	return s;
}

/* All of buf on fd 1, as it comes: nothing buffered past a test's output. */
static void out(const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(STDOUT_FILENO, buf, len);

		if (n < 0) {
			struct pollfd pfd = { .fd = STDOUT_FILENO, .events = POLLOUT };

			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {	/* an O_NONBLOCK stdout */
				poll(&pfd, 1, -1);
				continue;
			}
			fail("writing the output: %s", strerror(errno));
		}
		buf += n;
		len -= n;
	}
}

static void say(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = xvasprintf(&s, fmt, ap);
	va_end(ap);
	out(s, n);
	free(s);
}

/*
 * prefix.pl: "# " before the first byte of every line, the bytes as they
 * are (an unterminated last line stays so).  *line_start is its $needed.
 */
static void prefixed(const char *buf, size_t len, int *line_start)
{
	char o[3 * 4096];
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		if (n + 3 > sizeof(o)) {
			out(o, n);
			n = 0;
		}
		if (*line_start) {
			o[n++] = '#';
			o[n++] = ' ';
			*line_start = 0;
		}
		o[n++] = buf[i];
		if (buf[i] == '\n')
			*line_start = 1;
	}
	out(o, n);
}

static void add_word(struct words *w, char *s)
{
	if (w->n + 1 >= w->size) {
		w->size = w->size ? 2 * w->size : 8;
		w->v = realloc(w->v, w->size * sizeof(*w->v));
		if (!w->v)
			fail("out of memory");
	}
	w->v[w->n++] = s;
	w->v[w->n] = NULL;
}

static void free_words(struct words *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->v[i]);
	free(w->v);
	*w = (struct words){ 0 };
}

/*
 * runner.sh's unquoted $1 in tap_timeout: split on IFS's default (the
 * shell does not take IFS from the environment), then each word with a
 * *, ? or [ expanded to the names it matches in the cwd, if any.
 */
static void split(const char *s, struct words *w)
{
	while (*s) {
		size_t len;
		char *word;
		glob_t g;

		s += strspn(s, IFS);
		len = strcspn(s, IFS);
		if (!len)
			break;
		word = strndup(s, len);
		if (!word)
			fail("out of memory");
		s += len;
		if (!strpbrk(word, "*?[")) {
			add_word(w, word);
			continue;
		}
		switch (glob(word, GLOB_NOCHECK, NULL, &g)) {
		case 0:
			for (size_t i = 0; i < g.gl_pathc; i++)
				add_word(w, xstrdup(g.gl_pathv[i]));
			globfree(&g);
			free(word);
			break;
		case GLOB_NOSPACE:
			fail("out of memory");
			break;
		default:	/* GLOB_ABORTED: as the word itself */
			add_word(w, word);
		}
	}
}

/*
 * One line of 'read line' (no -r): a backslash quotes the next byte and
 * joins lines before a newline; IFS white space is trimmed at both ends
 * unless quoted.  0 at end of file, a last line without a newline too:
 * read fails on it, ending runner.sh's loop before it is looked at.
 */
static int read_line(FILE *f, const char *path, char **line)
{
	size_t n = 0, size = 64, keep = 0;
	char *s = xmalloc(size);
	int c;

	for (;;) {
		int quoted = 0;

		c = getc(f);
		if (c == EOF)
			break;
		if (c == '\n')
			break;
		if (!c)		/* the shell drops NUL bytes */
			continue;
		if (c == '\\') {
			c = getc(f);
			if (c == EOF)
				break;
			if (c == '\n' || !c)
				continue;
			quoted = 1;
		}
		if (!quoted && strchr(IFS, c) && !n)
			continue;
		if (n + 2 > size) {
			size *= 2;
			s = realloc(s, size);
			if (!s)
				fail("out of memory");
		}
		s[n++] = c;
		if (quoted || !strchr(IFS, c))
			keep = n;
	}
	if (ferror(f))
		fail("reading %s: %s", path, strerror(errno));
	if (c == EOF) {
		free(s);
		return 0;
	}
	s[keep] = '\0';
	*line = s;
	return 1;
}

/*
 * The "timeout" field of "$BASE_DIR/$DIR/settings", if readable: its last
 * timeout= line's value (cut -d= -f2-; a line without '=' is both field
 * and value); lines that start with '#' are comments.  The other fields
 * runner.sh evals into variables that no one reads: ignored.
 */
static char *settings_timeout(void)
{
	char *path = xasprintf("%s/%s/settings", base_dir, dir);
	char *timeout = xstrdup(DEFAULT_TIMEOUT);
	char *line;
	FILE *f;

	if (access(path, R_OK)) {
		free(path);
		return timeout;
	}
	f = fopen(path, "re");
	if (!f)
		fail("cannot read %s: %s", path, strerror(errno));
	while (read_line(f, path, &line)) {
		char *eq = strchr(line, '=');
		const char *value = eq ? eq + 1 : line;

		if (line[0] != '#' &&
		    (eq ? (size_t)(eq - line) == strlen("timeout") &&
			  !strncmp(line, "timeout", eq - line) :
			  !strcmp(line, "timeout"))) {
			free(timeout);
			timeout = xstrdup(value);
		}
		free(line);
	}
	fclose(f);
	free(path);
	return timeout;
}

/*
 * GNU timeout's DURATION: a number (strtod's, leading blanks included), an
 * optional s, m, h or d; negative or NaN is invalid.  0: none.
 */
static int parse_duration(const char *s, double *secs)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(s, &end);
	if (end == s || (errno && errno != ERANGE) || !(d >= 0))
		return -1;
	if (*end && end[1])
		return -1;
	switch (*end) {
	case '\0':
	case 's':
		break;
	case 'm':
		d *= 60;
		break;
	case 'h':
		d *= 60 * 60;
		break;
	case 'd':
		d *= 24 * 60 * 60;
		break;
	default:
		return -1;
	}
	*secs = d;
	return 0;
}

/*
 * KSELFTEST_<NAME>_ARGS, NAME through runner.sh's tr pipeline: blanks and
 * control characters dropped, what is not alphanumeric or _ made _, upper
 * case.
 */
static char *args_variable(const char *name)
{
	char *upper = xmalloc(strlen(name) + 1), *q = upper, *var;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		unsigned char c = *p;

		if (c == ' ' || c == '\t' || c < 0x20 || c == 0x7f)
			continue;
		if (c >= 'a' && c <= 'z')
			c -= 'a' - 'A';
		else if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
			c = '_';
		*q++ = c;
	}
	*q = '\0';
	var = xasprintf("KSELFTEST_%s_ARGS", upper);
	free(upper);
	return var;
}

/* The interpreter of a "#!" first line ('cut -c 3-'), or NULL. */
static char *shebang(const char *test)
{
	FILE *f = fopen(test, "re");
	char *line = NULL, *interp = NULL;
	size_t size = 0;
	ssize_t n;

	if (!f)
		return NULL;	/* head fails: not "#!", as in runner.sh */
	n = getline(&line, &size, f);
	if (n >= 2 && line[0] == '#' && line[1] == '!') {
		if (line[n - 1] == '\n')
			line[n - 1] = '\0';
		interp = xstrdup(line + 2);
	}
	free(line);
	fclose(f);
	return interp;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void signal_group(pid_t pgid, int sig)
{
	kill(-pgid, sig);
	/* A stopped process acts on sig only once it runs again. */
	if (sig != SIGKILL)
		kill(-pgid, SIGCONT);
}

/*
 * The test's environment as runner.sh's: the variables runner.sh exports,
 * and PWD and OLDPWD, which its shell's cd exports; BASE_DIR is no more
 * than a shell variable there.
 */
static void test_env(const char *timeout, const char *pwd)
{
	static const char *const exported[][2] = {
		{ "skip_rc", "4" },
		{ "timeout_rc", "124" },
		{ "logfile", "/dev/stdout" },
		{ "per_test_logging", "" },
		{ "kselftest_default_timeout", DEFAULT_TIMEOUT },
	};

	for (size_t i = 0; i < ARRAY_SIZE(exported); i++)
		setenv(exported[i][0], exported[i][1], 1);
	setenv("kselftest_timeout", timeout, 1);
	if (pwd) {
		setenv("OLDPWD", dir_pwd, 1);
		setenv("PWD", pwd, 1);
	}
	unsetenv("BASE_DIR");
}

/* The test's child: what the inner timeout does before its execvp(). */
static void __attribute__((noreturn)) child(char **argv, int w, const char *timeout,
					    const char *pwd)
{
	char msg[4096];
	int err, n;

	setpgid(0, 0);
	if (dup2(w, STDOUT_FILENO) < 0 || dup2(w, STDERR_FILENO) < 0)
		_exit(EXIT_CANCELED);
	sigprocmask(SIG_SETMASK, &orig_mask, NULL);
	test_env(timeout, pwd);
	execvp(argv[0], argv);
	err = errno;
	n = snprintf(msg, sizeof(msg), TIMEOUT_NAME ": failed to run command '%s': %s\n",
		     argv[0], strerror(err));
	if (n > 0)
		(void)!write(STDERR_FILENO, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
	_exit(err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
}

/*
 * argv in a group of its own, its output prefixed on ours until EOF, for
 * at most secs (0: no limit).  Its status as the shell would see the
 * timeouts': 124 if timed out, 128+S for a death by signal S.
 */
static int run(char **argv, double secs, const char *timeout, const char *pwd)
{
	double deadline = 0, kill_at = 0, abandon_at = 0;
	int line_start = 1, timed_out = 0, running = 1, status = 0;
	sigset_t waiting = orig_mask;
	int fds[2], r;
	pid_t pid;

	sigdelset(&waiting, SIGCHLD);
	if (pipe2(fds, O_CLOEXEC))
		fail("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (!pid)
		child(argv, fds[1], timeout, pwd);
	/* Also here: the deadline may come before the child's setpgid(). */
	setpgid(pid, pid);
	test_pgid = pid;
	close(fds[1]);
	r = fds[0];

	if (secs > 0)
		/* Far beyond any test's timeout; also inf. */
		deadline = now() + (secs < 1e9 ? secs : 1e9);
	while (r >= 0 || running) {
		struct pollfd pfd = { .fd = r, .events = POLLIN };
		struct timespec ts, *tsp = NULL;
		double t, until = 0;
		int n;

		if (running) {
			pid_t done = waitpid(pid, &status, WNOHANG);

			if (done == pid) {
				running = 0;
				continue;
			}
			if (done < 0 && errno != EINTR)
				fail("waitpid: %s", strerror(errno));
		}
		t = now();
		if (deadline && !timed_out && t >= deadline) {
			timed_out = 1;
			signal_group(pid, SIGTERM);
			kill_at = t + KILL_GRACE;
		}
		if (kill_at && t >= kill_at) {
			signal_group(pid, SIGKILL);
			kill_at = 0;
			abandon_at = t + KILL_GRACE;
		}
		/*
		 * What still holds the pipe is out of the group's reach (a
		 * kselftest_harness.h case child calls setpgrp()): its output
		 * is given up, not waited for.
		 */
		if (abandon_at && t >= abandon_at && r >= 0) {
			close(r);
			r = -1;
			abandon_at = 0;
			continue;
		}
		if (deadline && !timed_out)
			until = deadline;
		else if (kill_at)
			until = kill_at;
		else if (abandon_at && r >= 0)
			until = abandon_at;
		if (until) {
			t = until > t ? until - t : 0;
			ts.tv_sec = (time_t)t;
			ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9) + 1;
			if (ts.tv_nsec >= 1000000000L)
				ts.tv_nsec = 999999999L;
			tsp = &ts;
		}
		/* SIGCHLD, blocked elsewhere, ends the wait. */
		n = ppoll(r >= 0 ? &pfd : NULL, r >= 0, tsp, &waiting);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail("ppoll: %s", strerror(errno));
		}
		if (n > 0) {
			char buf[4096];
			ssize_t got = read(r, buf, sizeof(buf));

			if (got < 0) {
				if (errno == EINTR || errno == EAGAIN)
					continue;
				fail("reading the output of %s: %s", argv[0], strerror(errno));
			}
			if (!got) {
				close(r);
				r = -1;
			} else {
				prefixed(buf, got, &line_start);
			}
		}
	}
	test_pgid = 0;
	if (timed_out)
		return EXIT_TIMEDOUT;
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);

		/*
		 * The inner timeout's word on a core, and the shell's on its
		 * outer timeout's death by the same signal (GNU's dies of it
		 * as the test did), both on the prefixed pipe.
		 */
		if (WCOREDUMP(status)) {
			static const char core[] =
				TIMEOUT_NAME ": the monitored command dumped core\n";

			prefixed(core, strlen(core), &line_start);
		}
		if (sig != SIGINT && sig != SIGPIPE) {
			char *msg = xasprintf("%s\n", strsignal(sig));

			prefixed(msg, strlen(msg), &line_start);
			free(msg);
		}
		return 128 + sig;
	}
	return WEXITSTATUS(status);
}

/*
 * Where the shell's 'cd dest' goes, and its new $PWD: dest from $PWD
 * (unless absolute), "." and ".." taken as words, not looked up.
 */
static char *logical_path(const char *dest)
{
	char *path = xasprintf("%s/%s", dest[0] == '/' ? "" : dir_pwd, dest);
	char *p = xmalloc(strlen(path) + 2), *save, *word;
	size_t n = 0;

	for (word = strtok_r(path, "/", &save); word; word = strtok_r(NULL, "/", &save)) {
		if (!strcmp(word, "."))
			continue;
		if (!strcmp(word, "..")) {
			while (n && p[--n] != '/')
				;
			continue;
		}
		p[n++] = '/';
		strcpy(p + n, word);
		n += strlen(word);
	}
	if (!n)
		p[n++] = '/';
	p[n] = '\0';
	free(path);
	return p;
}

/* runner.sh's run_one. */
static void run_one(const char *test, int num, int cwd)
{
	char *copy = xstrdup(test), *name, *hdr, *timeout, *cmd, *interp, *var, *pwd;
	const char *args;
	struct words argv = { 0 };
	struct stat st;
	double secs;
	int rc;

	name = xstrdup(basename(copy));
	free(copy);
	timeout = settings_timeout();
	hdr = xasprintf("selftests: %s: %s", dir, name);
	say("# %s\n", hdr);
	if (stat(test, &st)) {
		say("# Warning: file %s is missing!\n", test);
		say("not ok %d %s\n", num, hdr);
		goto out;
	}
	var = args_variable(name);
	args = getenv(var);
	free(var);
	cmd = xasprintf("./%s %s", name, args ? args : "");
	if (access(test, X_OK)) {
		say("# Warning: file %s is not executable\n", test);
		interp = shebang(test);
		free(cmd);
		if (!interp) {
			say("not ok %d %s\n", num, hdr);
			goto out;
		}
		/* Without the arguments, as runner.sh does. */
		cmd = xasprintf("%s ./%s", interp, name);
		free(interp);
	}

	copy = xstrdup(test);
	pwd = logical_path(dirname(copy));
	free(copy);
	if (chdir(pwd)) {	/* the shell's cd: a message, then on */
		fprintf(stderr, "ksft-run: cd %s: %s\n", pwd, strerror(errno));
		free(pwd);
		pwd = NULL;
	}
	split(cmd, &argv);
	free(cmd);
	if (parse_duration(timeout, &secs)) {
		/* What runner.sh's outer timeout prints, through the prefix. */
		int line_start = 1;
		char *msg = xasprintf(TIMEOUT_NAME ": invalid time interval '%s'\n"
				      "Try '" TIMEOUT_NAME " --help' for more information.\n",
				      timeout);

		prefixed(msg, strlen(msg), &line_start);
		free(msg);
		rc = EXIT_CANCELED;
	} else {
		rc = run(argv.v, secs, timeout, pwd);
	}
	free_words(&argv);
	free(pwd);
	if (fchdir(cwd))
		fail("cannot return to the collection's directory: %s", strerror(errno));

	if (!rc) {
		say("ok %d %s\n", num, hdr);
	} else if (rc == KSFT_SKIP) {
		say("ok %d %s # SKIP\n", num, hdr);
	} else if (rc == EXIT_TIMEDOUT) {
		say("#\n");
		say("not ok %d %s # TIMEOUT %s seconds\n", num, hdr, timeout);
	} else {
		say("not ok %d %s # exit=%d\n", num, hdr, rc);
	}
out:
	free(hdr);
	free(timeout);
	free(name);
}

/* The shell's $PWD: the environment's if it names the cwd, else getcwd(). */
static char *shell_pwd(void)
{
	const char *pwd = getenv("PWD");
	struct stat a, b;
	char *cwd;

	if (pwd && pwd[0] == '/' && !stat(pwd, &a) && !stat(".", &b) &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return xstrdup(pwd);
	cwd = getcwd(NULL, 0);
	if (!cwd)
		fail("getcwd: %s", strerror(errno));
	return cwd;
}

/* echo "$@" | wc -w */
static int count_words(int argc, char *argv[])
{
	int words = 0;

	for (int i = 0; i < argc; i++) {
		for (const char *p = argv[i]; *p; p++)
			if (!strchr(" \t\n\v\f\r", *p) &&
			    (p == argv[i] || strchr(" \t\n\v\f\r", p[-1])))
				words++;
	}
	return words;
}

static void on_signal(int sig)
{
	pid_t pgid = test_pgid;

	if (pgid > 0)
		signal_group(pgid, sig);
	signal(sig, SIG_DFL);
	raise(sig);	/* delivered once this returns */
}

/* Only to end ppoll() in run(): SIGCHLD's default is to ignore it. */
static void on_child(int sig)
{
	(void)sig;
}

int main(int argc, char *argv[])
{
	struct sigaction sa = { 0 }, old;
	char *prefix;
	sigset_t chld;
	int cwd;

	base_dir = getenv("BASE_DIR");
	if (!base_dir || !*base_dir) {
		fputs("Error: BASE_DIR must be set before sourcing.\n", stderr);
		return 1;
	}
	/* A closed 0, 1 or 2 would be taken by the pipe. */
	for (int fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", fd ? O_WRONLY : O_RDONLY) != fd)
			fail("cannot open /dev/null as fd %d", fd);

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &orig_mask);
	sa.sa_handler = on_child;
	sigaction(SIGCHLD, &sa, NULL);
	sa.sa_handler = on_signal;
	for (size_t i = 0; i < ARRAY_SIZE(passed_on); i++) {
		/* What the shell was started ignoring stays ignored. */
		if (!sigaction(passed_on[i], NULL, &old) && old.sa_handler == SIG_IGN)
			continue;
		sigaction(passed_on[i], &sa, NULL);
	}

	cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cwd < 0)
		fail("cannot open the current directory: %s", strerror(errno));
	dir_pwd = shell_pwd();
	prefix = xasprintf("%s/", base_dir);
	dir = dir_pwd;
	if (!strncmp(dir_pwd, prefix, strlen(prefix)))
		dir += strlen(prefix);
	free(prefix);

	say("TAP version 13\n");
	say("1..%d\n", count_words(argc - 1, argv + 1));
	for (int i = 1; i < argc; i++)
		run_one(argv[i], i, cwd);
	free(dir_pwd);
	close(cwd);
	return 0;
}
