// SPDX-License-Identifier: MIT
/*
 * The main of `make layers`: each layer's library is linked whole into a
 * program with only this main, against the layers it may use. Nothing runs it;
 * the link is the test.
 */
int main(void);

int main(void)
{
	return 0;
}
