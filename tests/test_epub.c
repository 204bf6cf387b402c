/* The EPUB reader (text/epub.h) on EPUBs this test builds itself
 * (support/zip_store.h): EPUB 3 with a navigation document, EPUB 2 with a
 * nested NCX in another folder ("../" and %20 in the paths), and one without
 * contents; spine order, titles, the chapters' text (markup, script and
 * style dropped, entities decoded, paragraphs kept), continuation files and
 * the opening; then the errors: not a ZIP, a truncated one, no container,
 * an empty spine, no text. Skipped (exit 77) where the build has no EPUB. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "support/zip_store.h"
#include "text/epub.h"

#define CONTAINER                                                                                                     \
    "<?xml version=\"1.0\"?><container version=\"1.0\" "                                                             \
    "xmlns=\"urn:oasis:names:tc:opendocument:xmlns:container\"><rootfiles><rootfile full-path=\"OEBPS/content.opf\" " \
    "media-type=\"application/oebps-package+xml\"/></rootfiles></container>"
#define XHTML(title, body)                                                                                            \
    "<?xml version=\"1.0\" encoding=\"utf-8\"?><!DOCTYPE html><html xmlns=\"http://www.w3.org/1999/xhtml\" "        \
    "xmlns:epub=\"http://www.idpf.org/2007/ops\"><head><title>" title "</title><style>p { color: red; }</style>"   \
    "</head><body>" body "</body></html>"

static qtts_book parse(const zip_entry *e, size_t n, int want_ok, const char *what, qtts_err *err) {
    size_t len = 0;
    unsigned char *z = zip_store(e, n, &len);
    qtts_book b;
    memset(&b, 0, sizeof b);
    memset(err, 0, sizeof *err);
    int rc = z ? qtts_epub_parse(z, len, &b, err) : -1;
    TEST_CHECK((rc == 0) == want_ok, "%s: %s", what, rc ? err->msg : "parsed");
    free(z);
    return b;
}

static void expect_chapter(const qtts_book *b, size_t i, const char *title, const char *text) {
    if (i >= b->n) {
        TEST_CHECK(0, "chapter %zu is missing (%zu chapters)", i + 1, b->n);
        return;
    }
    TEST_CHECK(!strcmp(b->ch[i].title, title), "chapter %zu title '%s', want '%s'", i + 1, b->ch[i].title, title);
    TEST_CHECK(!strcmp(b->ch[i].text, text), "chapter %zu text:\n[%s]\nwant:\n[%s]", i + 1, b->ch[i].text, text);
}

static void test_epub3(void) {
    const char *opf =
        "<?xml version=\"1.0\"?><package xmlns=\"http://www.idpf.org/2007/opf\" version=\"3.0\"><metadata/>"
        "<manifest><item id=\"nav\" href=\"nav.xhtml\" media-type=\"application/xhtml+xml\" properties=\"nav\"/>"
        "<item id=\"cover\" href=\"cover.xhtml\" media-type=\"application/xhtml+xml\"/>"
        "<item id=\"img\" href=\"pic.svg\" media-type=\"image/svg+xml\"/>"
        "<item id=\"title\" href=\"title.xhtml\" media-type=\"application/xhtml+xml\"/>"
        "<item id=\"c1\" href=\"text/ch1.xhtml\" media-type=\"application/xhtml+xml\"/>"
        "<item id=\"c1b\" href=\"text/ch1b.xhtml\" media-type=\"application/xhtml+xml\"/>"
        "<item id=\"c2\" href=\"text/ch2.xhtml\" media-type=\"application/xhtml+xml\"/>"
        "<item id=\"c3\" href=\"text/the%20end.xhtml\" media-type=\"application/xhtml+xml\"/></manifest>"
        /* the spine, not the manifest, gives the order */
        "<spine><itemref idref=\"cover\"/><itemref idref=\"img\"/><itemref idref=\"title\"/><itemref idref=\"c1\"/>"
        "<itemref idref=\"c1b\"/><itemref idref=\"c2\"/><itemref idref=\"c3\"/></spine></package>";
    const char *nav = XHTML("Contents", "<nav epub:type=\"landmarks\"><ol><li><a href=\"cover.xhtml\">Cover</a></li>"
                                        "</ol></nav><nav epub:type=\"toc\"><h1>Contents</h1><ol>"
                                        "<li><a href=\"text/ch1.xhtml\">The Beginning</a></li>"
                                        "<li><a href=\"text/ch2.xhtml#start\">The   Middle</a><ol>"
                                        "<li><a href=\"text/ch2.xhtml#part2\">Deeper</a></li></ol></li>"
                                        "<li><a href=\"text/the%20end.xhtml\">The End</a></li></ol></nav>");
    const zip_entry e[] = {
        {"mimetype", "application/epub+zip"},
        {"META-INF/container.xml", CONTAINER},
        {"OEBPS/content.opf", opf},
        {"OEBPS/nav.xhtml", nav},
        {"OEBPS/cover.xhtml", XHTML("Cover", "<div><img src=\"cover.jpg\" alt=\"\"/></div>")},
        {"OEBPS/pic.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"><text>not read</text></svg>"},
        {"OEBPS/title.xhtml", XHTML("Title", "<h1>A Small Book</h1><p>by Nobody</p>")},
        {"OEBPS/text/ch1.xhtml",
         XHTML("ch1", "<h1>The Beginning</h1><p>It was a <em>dark</em> night &amp; cold.</p>"
                      "<script>var x = 1;</script><p>Line one<br/>line two.</p>")},
        {"OEBPS/text/ch1b.xhtml", XHTML("ch1b", "<p>Still the beginning.</p>")},
        {"OEBPS/text/ch2.xhtml", XHTML("ch2", "<p id=\"start\">The rain\n   fell.</p><ul><li>one</li><li>two</li></ul>")},
        {"OEBPS/text/the end.xhtml", XHTML("ch3", "<h2>The End</h2><p>Morning &#233;t&#xE9; came.</p>")},
    };
    qtts_err err;
    qtts_book b = parse(e, sizeof e / sizeof e[0], 1, "EPUB 3", &err);
    TEST_CHECK(b.n == 4, "EPUB 3: %zu chapters, want 4 (opening + 3)", b.n);
    expect_chapter(&b, 0, "Opening", "Opening.\n\nA Small Book\n\nby Nobody");
    expect_chapter(&b, 1, "The Beginning",
                   "The Beginning.\n\nIt was a dark night & cold.\n\nLine one\nline two.\n\nStill the beginning.");
    expect_chapter(&b, 2, "The Middle", "The Middle.\n\nThe rain fell.\n\none\n\ntwo");
    expect_chapter(&b, 3, "The End", "The End.\n\nMorning \xc3\xa9t\xc3\xa9 came.");
    TEST_CHECK(b.n == 4 && b.ch[1].line == 4 && b.ch[3].line == 7, "lines are spine positions (%d, %d)",
               b.n == 4 ? b.ch[1].line : -1, b.n == 4 ? b.ch[3].line : -1);
    qtts_book_free(&b);
}

static void test_epub2(void) {
    const char *container = "<?xml version=\"1.0\"?><container xmlns=\"urn:oasis:names:tc:opendocument:xmlns:"
                            "container\"><rootfiles><rootfile full-path=\"book/package.opf\"/></rootfiles></container>";
    const char *opf =
        "<?xml version=\"1.0\"?><opf:package xmlns:opf=\"http://www.idpf.org/2007/opf\" version=\"2.0\">"
        "<opf:manifest><opf:item id=\"ncx\" href=\"Misc/toc.ncx\" media-type=\"application/x-dtbncx+xml\"/>"
        "<opf:item id=\"a\" href=\"Text/a.html\" media-type=\"application/xhtml+xml\"/>"
        "<opf:item id=\"b\" href=\"Text/b.html\" media-type=\"application/xhtml+xml\"/>"
        "<opf:item id=\"c\" href=\"Text/c.html\" media-type=\"application/xhtml+xml\"/></opf:manifest>"
        "<opf:spine toc=\"ncx\"><opf:itemref idref=\"c\"/><opf:itemref idref=\"a\"/><opf:itemref idref=\"b\"/>"
        "</opf:spine></opf:package>";
    const char *ncx = "<?xml version=\"1.0\"?><ncx xmlns=\"http://www.daisy.org/z3986/2005/ncx/\"><navMap>"
                      "<navPoint id=\"p1\"><navLabel><text>Part One</text></navLabel>"
                      "<content src=\"../Text/c.html\"/>"
                      "<navPoint id=\"p2\"><navLabel><text>First</text></navLabel>"
                      "<content src=\"../Text/./a.html#x\"/></navPoint></navPoint>"
                      "<navPoint id=\"p3\"><navLabel><text>Second</text></navLabel>"
                      "<content src=\"../Text/b.html\"/></navPoint></navMap></ncx>";
    const zip_entry e[] = {
        {"mimetype", "application/epub+zip"},
        {"META-INF/container.xml", container},
        {"book/package.opf", opf},
        {"book/Misc/toc.ncx", ncx},
        {"book/Text/a.html", "<html><body><p>Alpha.</body></html>"}, /* unclosed: the HTML parser recovers */
        {"book/Text/b.html", "<html><body><p>Beta.</p></body></html>"},
        {"book/Text/c.html", "<html><body><h1>Part One</h1></body></html>"},
    };
    qtts_err err;
    qtts_book b = parse(e, sizeof e / sizeof e[0], 1, "EPUB 2", &err);
    TEST_CHECK(b.n == 3, "EPUB 2: %zu chapters, want 3", b.n);
    expect_chapter(&b, 0, "Part One", "Part One.");
    expect_chapter(&b, 1, "First", "First.\n\nAlpha.");
    expect_chapter(&b, 2, "Second", "Second.\n\nBeta.");
    qtts_book_free(&b);
}

static void test_no_contents(void) {
    const char *opf = "<package><manifest><item id=\"a\" href=\"a.xhtml\"/><item id=\"b\" href=\"b.xhtml\"/>"
                      "<item id=\"c\" href=\"c.xhtml\"/></manifest><spine><itemref idref=\"a\"/>"
                      "<itemref idref=\"b\"/><itemref idref=\"missing\"/><itemref idref=\"c\"/></spine></package>";
    const zip_entry e[] = {
        {"META-INF/container.xml", CONTAINER},
        {"OEBPS/content.opf", opf},
        {"OEBPS/a.xhtml", XHTML("Doc A", "<h2>Heading A</h2><p>Text A.</p>")},
        {"OEBPS/b.xhtml", XHTML("Doc B", "<p>Text B.</p>")},
        {"OEBPS/c.xhtml", XHTML("", "<p>Text C.</p>")},
    };
    qtts_err err;
    qtts_book b = parse(e, sizeof e / sizeof e[0], 1, "no contents", &err);
    TEST_CHECK(b.n == 3, "no contents: %zu chapters, want 3", b.n);
    expect_chapter(&b, 0, "Heading A", "Heading A.\n\nText A.");
    expect_chapter(&b, 1, "Doc B", "Doc B.\n\nText B.");
    expect_chapter(&b, 2, "Chapter 3", "Chapter 3.\n\nText C.");
    qtts_book_free(&b);
}

static void expect_error(const zip_entry *e, size_t n, const char *needle, const char *what) {
    qtts_err err;
    qtts_book b = parse(e, n, 0, what, &err);
    TEST_CHECK(b.n == 0 && b.ch == NULL && strstr(err.msg, needle), "%s: '%s' (want '%s')", what, err.msg, needle);
}

static void test_errors(void) {
    qtts_err err = {0};
    qtts_book b;
    TEST_CHECK(qtts_epub_parse("hello", 5, &b, &err) == -1 && strstr(err.msg, "not a ZIP"), "text: %s", err.msg);
    TEST_CHECK(qtts_epub_parse("", 0, &b, &err) == -1 && strstr(err.msg, "not a ZIP"), "empty: %s", err.msg);
    const zip_entry ok[] = {{"META-INF/container.xml", CONTAINER},
                            {"OEBPS/content.opf", "<package><manifest><item id=\"a\" href=\"a.xhtml\"/></manifest>"
                                                  "<spine><itemref idref=\"a\"/></spine></package>"},
                            {"OEBPS/a.xhtml", XHTML("A", "<p>Words.</p>")}};
    size_t len = 0;
    unsigned char *z = zip_store(ok, 3, &len);
    for (size_t cut = 0; z && cut < len; cut += 37) { /* every truncation fails cleanly */
        memset(&err, 0, sizeof err);
        int rc = qtts_epub_parse(z, cut, &b, &err);
        TEST_CHECK(rc == -1 && err.msg[0] && b.n == 0, "truncated at %zu: %s", cut, rc ? err.msg : "parsed");
        if (!rc) qtts_book_free(&b);
    }
    TEST_CHECK(z && qtts_epub_parse(z, len, &b, &err) == 0 && b.n == 1, "the whole one parses: %s", err.msg);
    qtts_book_free(&b);
    free(z);
    expect_error(ok + 1, 2, "container.xml", "no container");
    const zip_entry no_spine[] = {{"META-INF/container.xml", CONTAINER},
                                  {"OEBPS/content.opf", "<package><manifest/><spine/></package>"}};
    expect_error(no_spine, 2, "empty spine", "empty spine");
    const zip_entry no_opf[] = {{"META-INF/container.xml", CONTAINER}};
    expect_error(no_opf, 1, "OEBPS/content.opf", "no package file");
    const zip_entry no_text[] = {{"META-INF/container.xml", CONTAINER},
                                 {"OEBPS/content.opf", "<package><manifest><item id=\"a\" href=\"a.xhtml\"/>"
                                                       "</manifest><spine><itemref idref=\"a\"/></spine></package>"},
                                 {"OEBPS/a.xhtml", XHTML("A", "<div><img src=\"x.png\"/></div>")}};
    expect_error(no_text, 3, "no text", "no text");
    const zip_entry missing[] = {{"META-INF/container.xml", CONTAINER},
                                 {"OEBPS/content.opf", "<package><manifest><item id=\"a\" href=\"a.xhtml\"/>"
                                                       "</manifest><spine><itemref idref=\"a\"/></spine></package>"}};
    expect_error(missing, 2, "a.xhtml", "a spine document missing from the archive");
}

int main(void) {
    if (!qtts_epub_supported()) {
        printf("SKIP test_epub: built without EPUB support (libzip-dev and libxml2-dev)\n");
        return 77;
    }
    test_epub3();
    test_epub2();
    test_no_contents();
    test_errors();
    return test_finish("test_epub");
}
