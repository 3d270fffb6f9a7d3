/*
 * roff: text for man pages, written by the programs themselves from their
 * own tables (drover(1) from the command table, droverd(8), drover-worker(8)
 * and their .conf(5) pages from the option and config-key tables), so that a
 * man page says what --help says: both come from one table.
 *
 * roff_text escapes for groff: a backslash as \e, every '-' as \- (so that
 * options and paths copy and paste as typed), a '.' or '\'' that starts a
 * line guarded with \&. It never writes a newline. roff_para writes the text
 * as a paragraph (.PP, the text, a newline). Both take a FILE so that a test
 * can capture them.
 */
#ifndef DROVER_ROFF_H
#define DROVER_ROFF_H

#include <stdio.h>

void roff_text(FILE *f, const char *s);
void roff_para(FILE *f, const char *s);

#endif
