// SPDX-License-Identifier: GPL-2.0
/* The program exec_test runs: its exit status proves it ran. */
int main(void)
{
	return 42;
}
