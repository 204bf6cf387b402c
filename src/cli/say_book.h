/* qtts say --book FILE -o DIR: a book read chapter by chapter into DIR.
 * Mechanism only (chapters, file names, the resume state, the playlist);
 * cmd_say.c speaks. Resume rule: a chapter is written to "NAME.part" and
 * renamed when complete, then recorded in DIR/qtts-book.state with a hash of
 * its text and of everything that shapes its audio; a recorded chapter whose
 * file exists and whose hash matches is never spoken again. */
#ifndef QTTS_CLI_SAY_BOOK_H
#define QTTS_CLI_SAY_BOOK_H

#include <stddef.h>
#include <stdint.h>

#include "text/book.h"

typedef struct {
    uint64_t hash; /* 0: not recorded */
    double seconds;
    int guarded; /* utterances the runaway guard ended */
} say_book_done;

typedef struct {
    qtts_book b;
    say_book_done *done; /* [b.n], from the state file */
    uint64_t seed;
    int has_seed; /* the state file names the seed of the earlier run */
    const char *dir;
} say_book;

/* Reads and parses path (.md/.markdown: Markdown; .epub: an EPUB,
 * text/epub.h; anything else: plain text) and dir's state. Prints the
 * error and returns -1. */
int say_book_open(const char *path, const char *dir, say_book *bk);
/* "03 - Title.EXT" (the title reduced to letters, digits, spaces, - and _). */
void say_book_file_name(const say_book *bk, size_t i, const char *ext, char *out, size_t size);
uint64_t say_book_hash(const char *text, const char *settings);
/* Records the seed (a new state file) or a finished chapter; -1 after printing why. */
int say_book_record_seed(say_book *bk, uint64_t seed);
int say_book_record(say_book *bk, size_t i, uint64_t hash, double seconds, int guarded);
/* DIR/book.m3u over the chapters recorded so far; -1 after printing why. */
int say_book_write_m3u(const say_book *bk, const char *ext);
/* DIR/book.m4b (say_book_m4b.c): every chapter file (all finished, in a
 * format libsndfile reads) joined, a chapter mark with its title each;
 * -1 after printing why. */
int say_book_write_m4b(const say_book *bk, const char *ext);
void say_book_close(say_book *bk);

#endif
