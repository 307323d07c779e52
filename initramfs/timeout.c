// SPDX-License-Identifier: GPL-2.0
/*
 * timeout: /usr/bin/timeout in the guest, as kselftest's runner.sh uses
 * GNU coreutils' one:
 *
 *   timeout [--foreground] DURATION COMMAND [ARG]...
 *
 * runs COMMAND and sends it SIGTERM once DURATION (seconds; a fraction and
 * an s, m, h or d suffix are allowed; 0: never) has passed.  The exit
 * status is COMMAND's, or 124 if it was timed out (runner.sh prints
 * "not ok ... # TIMEOUT" for 124 only), 125 if timeout itself failed, 126
 * if COMMAND could not be run, 127 if it was not found.  A COMMAND killed
 * by a signal other than the timeout's kills timeout with the same signal,
 * so the shell reads 128+signal as it would for COMMAND itself.
 *
 * Without --foreground, timeout puts itself and COMMAND in a process group
 * of their own and the timeout's signal goes to the whole group (a test's
 * forked children too); with it, to COMMAND only.  SIGTERM, SIGINT,
 * SIGHUP and SIGQUIT sent to timeout are passed on the same way.
 *
 * Busybox's timeout differs on each of these points (no --foreground; a
 * timeout is 128+SIGTERM, the same as a test that dies of SIGTERM by
 * itself), and a shell wrapper around it cost 20 to 30 ms more per test
 * program under TCG than this does.  The harness builds it static, per arch
 * (harness/initramfs.py), and tests it on the host
 * (harness/tests/test_timeout.py).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#define EXIT_TIMEDOUT	124
#define EXIT_FAILED	125
#define EXIT_CANNOT_RUN	126
#define EXIT_NOT_FOUND	127

static volatile sig_atomic_t timed_out;
static volatile pid_t child;
static int foreground;

static void send(int sig)
{
	struct sigaction ignore = { .sa_handler = SIG_IGN };

	if (child <= 0)
		return;
	kill(child, sig);
	if (foreground)
		return;
	/* Our own group, timeout included: not a loop of signals. */
	sigaction(sig, &ignore, NULL);
	kill(0, sig);
	/* A stopped process acts on sig only once it runs again (GNU's too). */
	if (sig != SIGKILL && sig != SIGCONT) {
		kill(child, SIGCONT);
		sigaction(SIGCONT, &ignore, NULL);
		kill(0, SIGCONT);
	}
}

static void on_alarm(int sig)
{
	(void)sig;
	timed_out = 1;
	send(SIGTERM);
}

static void on_signal(int sig)
{
	send(sig);
}

/* Only to end sigsuspend() in main(): SIGCHLD's default is to ignore it. */
static void on_child(int sig)
{
	(void)sig;
}

static void usage(const char *why)
{
	fprintf(stderr, "timeout: %s\n"
		"usage: timeout [--foreground] DURATION COMMAND [ARG]...\n", why);
	exit(EXIT_FAILED);
}

/* Seconds in s ("2", "0.5", "3m", ...); a negative or bad one: usage. */
static double duration(const char *s)
{
	char *end;
	double secs;

	errno = 0;
	secs = strtod(s, &end);
	if (end == s || errno || !(secs >= 0))	/* NaN too */
		usage("invalid duration");
	switch (*end) {
	case '\0':
	case 's':
		break;
	case 'm':
		secs *= 60;
		break;
	case 'h':
		secs *= 60 * 60;
		break;
	case 'd':
		secs *= 24 * 60 * 60;
		break;
	default:
		usage("invalid duration");
	}
	if (*end && end[1])
		usage("invalid duration");
	return secs;
}

static void arm(double secs)
{
	struct itimerval it = { 0 };

	if (secs <= 0)
		return;
	/* Far beyond any test's timeout, and within time_t on every arch. */
	if (secs > 1e8)
		secs = 1e8;
	it.it_value.tv_sec = (time_t)secs;
	it.it_value.tv_usec = (suseconds_t)((secs - (double)(time_t)secs) * 1e6);
	if (!it.it_value.tv_sec && !it.it_value.tv_usec)
		it.it_value.tv_usec = 1;
	if (setitimer(ITIMER_REAL, &it, NULL)) {
		perror("timeout: setitimer");
		exit(EXIT_FAILED);
	}
}

/* Dies of sig as COMMAND did, without a core file of its own. */
static void die_of(int sig)
{
	struct rlimit none = { 0, 0 };
	sigset_t set;

	setrlimit(RLIMIT_CORE, &none);
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	exit(128 + sig);
}

int main(int argc, char *argv[])
{
	static const int passed_on[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };
	struct sigaction sa = { 0 };
	sigset_t handled, old, waiting;
	double secs;
	int status, i = 1;
	pid_t pid;

	if (i < argc && !strcmp(argv[i], "--foreground")) {
		foreground = 1;
		i++;
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (argc - i < 2)
		usage("missing operand");
	secs = duration(argv[i++]);

	if (!foreground) {
		setpgid(0, 0);
		/* In a background group: not stopped by terminal I/O. */
		signal(SIGTTIN, SIG_IGN);
		signal(SIGTTOU, SIG_IGN);
	}
	sigemptyset(&handled);
	sigaddset(&handled, SIGALRM);
	sigaddset(&handled, SIGCHLD);
	for (size_t n = 0; n < ARRAY_SIZE(passed_on); n++)
		sigaddset(&handled, passed_on[n]);
	sa.sa_mask = handled;
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	/* Also whatever SIGCHLD disposition timeout was started with. */
	sa.sa_handler = on_child;
	sigaction(SIGCHLD, &sa, NULL);
	sa.sa_handler = on_signal;
	for (size_t n = 0; n < ARRAY_SIZE(passed_on); n++)
		sigaction(passed_on[n], &sa, NULL);

	/*
	 * Held but inside sigsuspend() below, whatever mask timeout was
	 * started with: a signal before child is set would reach nobody, and
	 * the timer's after the command ended would time out a finished one.
	 */
	sigprocmask(SIG_BLOCK, &handled, &old);
	waiting = old;
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(&handled, sig))
			sigdelset(&waiting, sig);
	pid = fork();
	if (pid < 0) {
		perror("timeout: fork");
		return EXIT_FAILED;
	}
	if (!pid) {
		signal(SIGALRM, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		signal(SIGTTIN, SIG_DFL);
		signal(SIGTTOU, SIG_DFL);
		for (size_t n = 0; n < ARRAY_SIZE(passed_on); n++)
			signal(passed_on[n], SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		execvp(argv[i], &argv[i]);
		fprintf(stderr, "timeout: failed to run command '%s': %s\n", argv[i],
			strerror(errno));
		_exit(errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
	}
	child = pid;
	arm(secs);

	for (;;) {
		pid_t done = waitpid(pid, &status, WNOHANG);

		if (done == pid)
			break;
		if (done < 0 && errno != EINTR) {
			perror("timeout: waitpid");
			return EXIT_FAILED;
		}
		sigsuspend(&waiting);
	}
	child = 0;
	if (timed_out)
		return EXIT_TIMEDOUT;
	if (WIFSIGNALED(status))
		die_of(WTERMSIG(status));
	return WEXITSTATUS(status);
}
