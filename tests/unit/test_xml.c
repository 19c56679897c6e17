/* xml: service bodies parsed with a real XML parser; message bodies escaped. */
#include "message.h"
#include "xml.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DECL "<?xml version=\"1.0\" encoding=\"utf-8\"?>"

static const char two_messages[] =
    DECL "<QueueMessagesList>\n"
    "  <QueueMessage>\n"
    "    <MessageId>5974b586-0df3-4e2d-ad0c-18e3892bfca2</MessageId>\n"
    "    <InsertionTime>Fri, 09 Oct 2009 21:04:30 GMT</InsertionTime>\n"
    "    <ExpirationTime>Fri, 16 Oct 2009 21:04:30 GMT</ExpirationTime>\n"
    "    <PopReceipt>YzQ4Yzg1MDIG+/=</PopReceipt>\n"
    "    <TimeNextVisible>Fri, 09 Oct 2009 23:29:20 GMT</TimeNextVisible>\n"
    "    <DequeueCount>3</DequeueCount>\n"
    "    <MessageText>a &amp; b &lt;c&gt; &#x41;&#66; &quot;q&apos;</MessageText>\n"
    "  </QueueMessage>\n"
    "  <QueueMessage><MessageId>id-2</MessageId>"
    "<InsertionTime>Mon, 01 Jan 2024 00:00:00 GMT</InsertionTime>"
    "<ExpirationTime>Mon, 01 Jan 2024 00:00:01 GMT</ExpirationTime>"
    "<DequeueCount>0</DequeueCount>"
    "<MessageText><![CDATA[<raw> & ]]>tail\xc5\xbe</MessageText></QueueMessage>"
    "</QueueMessagesList>";

static void parse_ok(const char *body, sqlq_message_list *l)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r = sqlq_xml_parse_messages(body, strlen(body), l, &err);
    if (r != SQLQ_OK)
        fail_msg("parse failed: %s", err.message);
}

static void test_xml_messages_entities_cdata_and_dates(void **state)
{
    (void)state;
    sqlq_message_list l = {NULL, 0};
    parse_ok(two_messages, &l);
    assert_int_equal(l.count, 2);
    sqlq_message *m = &l.items[0];
    assert_string_equal(m->id, "5974b586-0df3-4e2d-ad0c-18e3892bfca2");
    assert_string_equal(m->pop_receipt, "YzQ4Yzg1MDIG+/=");
    assert_string_equal(m->text, "a & b <c> AB \"q'");
    assert_int_equal(m->text_len, strlen("a & b <c> AB \"q'"));
    assert_int_equal(m->dequeue_count, 3);
    assert_int_equal(m->insertion_time, 1255122270);
    assert_int_equal(m->expiration_time, 1255122270 + 7 * 86400);
    assert_int_equal(m->next_visible_time, 1255122270 + 2 * 3600 + 24 * 60 + 50);
    m = &l.items[1];
    assert_string_equal(m->id, "id-2");
    assert_null(m->pop_receipt); /* as in a peek */
    assert_string_equal(m->text, "<raw> & tail\xc5\xbe");
    assert_int_equal(m->dequeue_count, 0);
    assert_int_equal(m->insertion_time, 1704067200);
    assert_int_equal(m->next_visible_time, 0);

    /* Appends to what the list already holds. */
    parse_ok(two_messages, &l);
    assert_int_equal(l.count, 4);
    assert_string_equal(l.items[3].id, "id-2");
    sqlq_message_list_free(&l);
    assert_null(l.items);
}

static void test_xml_empty_lists(void **state)
{
    (void)state;
    sqlq_message_list l = {NULL, 0};
    parse_ok(DECL "<QueueMessagesList />", &l);
    assert_int_equal(l.count, 0);
    parse_ok("<QueueMessagesList>\n</QueueMessagesList>", &l);
    assert_int_equal(l.count, 0);
    parse_ok("<QueueMessagesList><QueueMessage><MessageId>x</MessageId><MessageText/>"
             "</QueueMessage></QueueMessagesList>",
             &l);
    assert_int_equal(l.count, 1);
    assert_non_null(l.items[0].text);
    assert_string_equal(l.items[0].text, "");
    sqlq_message_list_free(&l);
}

static void parse_fails(const char *body)
{
    sqlq_message_list l = {NULL, 0};
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_xml_parse_messages(body, strlen(body), &l, &err), SQLQ_E_PARSE);
    assert_int_equal(err.code, SQLQ_E_PARSE);
    assert_true(err.message[0] != '\0');
    assert_int_equal(l.count, 0);
    assert_null(l.items);
}

static void test_xml_malformed_is_a_parse_error(void **state)
{
    (void)state;
    parse_fails("");
    parse_fails("not xml at all");
    parse_fails("<QueueMessagesList><QueueMessage><MessageId>x</MessageId>"); /* truncated */
    parse_fails("<QueueMessagesList><QueueMessage></QueueMessagesList>");      /* mismatched */
    parse_fails("<QueueMessagesList>&bogus;</QueueMessagesList>");            /* unknown entity */
    parse_fails("<Error><Code>x</Code></Error>");                             /* wrong document */
    parse_fails("<QueueMessagesList><QueueMessage><MessageId>x</MessageId>"
                "<InsertionTime>yesterday</InsertionTime></QueueMessage></QueueMessagesList>");
    parse_fails("<QueueMessagesList><QueueMessage><MessageId>x</MessageId>"
                "<DequeueCount>many</DequeueCount></QueueMessage></QueueMessagesList>");
    parse_fails("<QueueMessagesList><QueueMessage><MessageText>x</MessageText>"
                "</QueueMessage></QueueMessagesList>"); /* no MessageId */
    parse_fails("<?xml version=\"1.0\"?><!DOCTYPE QueueMessagesList [<!ENTITY a \"aaaa\">"
                "<!ENTITY b \"&a;&a;&a;&a;\">]><QueueMessagesList>&b;</QueueMessagesList>");
}

static void test_xml_queue_list_with_paging(void **state)
{
    (void)state;
    const char *page1 = DECL "<EnumerationResults ServiceEndpoint=\"http://x/\"><Prefix>q</Prefix>"
                             "<MaxResults>2</MaxResults><Queues><Queue><Name>q-a</Name><Metadata/>"
                             "</Queue><Queue><Name>q-b</Name></Queue></Queues>"
                             "<NextMarker>/acct/q-c</NextMarker></EnumerationResults>";
    const char *page2 = "<EnumerationResults><Queues><Queue><Name>q-c</Name></Queue></Queues>"
                        "<NextMarker /></EnumerationResults>";
    char **names = NULL;
    size_t count = 0;
    char *marker = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_xml_parse_queue_list(page1, strlen(page1), &names, &count, &marker, &err),
                     SQLQ_OK);
    assert_int_equal(count, 2);
    assert_string_equal(marker, "/acct/q-c");
    free(marker);
    assert_int_equal(sqlq_xml_parse_queue_list(page2, strlen(page2), &names, &count, &marker, &err),
                     SQLQ_OK);
    assert_null(marker);
    assert_int_equal(count, 3);
    assert_string_equal(names[0], "q-a");
    assert_string_equal(names[1], "q-b");
    assert_string_equal(names[2], "q-c");
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);

    names = NULL;
    count = 0;
    const char *empty = "<EnumerationResults><Queues/></EnumerationResults>";
    assert_int_equal(sqlq_xml_parse_queue_list(empty, strlen(empty), &names, &count, &marker, &err),
                     SQLQ_OK);
    assert_int_equal(count, 0);
    assert_null(names);
    assert_int_equal(sqlq_xml_parse_queue_list("<x", 2, &names, &count, &marker, &err), SQLQ_E_PARSE);
}

static void test_xml_error_body(void **state)
{
    (void)state;
    const char *body = DECL "<Error><Code>QueueNotFound</Code><Message>The specified queue does "
                            "not exist.\nRequestId:7f0a\nTime:2024-01-01T00:00:00.000Z</Message>"
                            "</Error>";
    char code[64], message[128];
    assert_int_equal(sqlq_xml_parse_error(body, strlen(body), code, sizeof(code), message,
                                          sizeof(message)),
                     SQLQ_OK);
    assert_string_equal(code, "QueueNotFound");
    assert_string_equal(message, "The specified queue does not exist.");
    /* Not an error document: empty outputs, a parse error. */
    assert_int_equal(sqlq_xml_parse_error("<html>", 6, code, sizeof(code), message, sizeof(message)),
                     SQLQ_E_PARSE);
    assert_string_equal(code, "");
    assert_string_equal(message, "");
    /* Truncates to the buffers. */
    assert_int_equal(sqlq_xml_parse_error(body, strlen(body), code, 6, message, 4), SQLQ_OK);
    assert_string_equal(code, "Queue");
    assert_string_equal(message, "The");
}

/* Specials first, last and side by side, bytes above 0x7f and a NUL are escaped or kept as
 * they are; a text with none comes out whole. */
static void test_xml_escape_edges(void **state)
{
    (void)state;
    const char text[] = "<&\r\x80\0>>";
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    assert_int_equal(sqlq_xml_escape(&b, text, sizeof(text) - 1), SQLQ_OK);
    const char want[] = "&lt;&amp;&#xD;\x80\0&gt;&gt;";
    assert_int_equal(b.len, sizeof(want) - 1);
    assert_memory_equal(b.data, want, sizeof(want) - 1);
    sqlq_buf_reset(&b);
    assert_int_equal(sqlq_xml_escape(&b, "eyJpZCI6MX0=", 12), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b), "eyJpZCI6MX0=");
    sqlq_buf_free(&b);
}

static void test_xml_escape_round_trip(void **state)
{
    (void)state;
    const char text[] = "a&b<c>d\r\n\"e' &amp; \xe2\x82\xac";
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    assert_int_equal(sqlq_xml_message_body(&b, text, strlen(text)), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b),
                        "<QueueMessage><MessageText>a&amp;b&lt;c&gt;d&#xD;\n\"e' &amp;amp; "
                        "\xe2\x82\xac</MessageText></QueueMessage>");
    /* What we write, a parser reads back byte for byte (the CR survives). */
    sqlq_buf doc;
    sqlq_buf_init(&doc, 0);
    assert_int_equal(sqlq_buf_printf(&doc, "<QueueMessagesList><QueueMessage><MessageId>i</MessageId>"
                                           "%s</QueueMessage></QueueMessagesList>",
                                     strstr(sqlq_buf_str(&b), "<MessageText>")),
                     SQLQ_OK);
    char *end = strstr(doc.data, "</QueueMessage></QueueMessage>");
    assert_non_null(end);
    memmove(end, end + strlen("</QueueMessage>"), strlen(end + strlen("</QueueMessage>")) + 1);
    sqlq_message_list l = {NULL, 0};
    parse_ok(doc.data, &l);
    assert_int_equal(l.count, 1);
    assert_int_equal(l.items[0].text_len, strlen(text));
    assert_memory_equal(l.items[0].text, text, strlen(text));
    sqlq_message_list_free(&l);
    sqlq_buf_free(&doc);
    sqlq_buf_free(&b);
}

static void test_xml_http_dates(void **state)
{
    (void)state;
    int64_t t = 0;
    assert_true(sqlq_xml_parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT", &t));
    assert_int_equal(t, 0);
    assert_true(sqlq_xml_parse_http_date("Fri, 31 Dec 9999 23:59:59 GMT", &t));
    assert_int_equal(t, 253402300799LL); /* Azure's "never expires" */
    assert_false(sqlq_xml_parse_http_date("Fri, 31 Dez 2024 23:59:59 GMT", &t));
    assert_false(sqlq_xml_parse_http_date("2024-01-01T00:00:00Z", &t));
    assert_false(sqlq_xml_parse_http_date("Mon, 01 Jan 2024 00:00:00 UTC", &t));
    assert_false(sqlq_xml_parse_http_date(NULL, &t));
}


static sqlq_result parse_one(const char *id, const char *receipt, const char *count,
                             sqlq_message_list *l, sqlq_error *err)
{
    char body[2048];
    snprintf(body, sizeof(body),
             "<QueueMessagesList><QueueMessage><MessageId>%s</MessageId>"
             "<InsertionTime>Mon, 01 Jan 2024 00:00:00 GMT</InsertionTime>"
             "<PopReceipt>%s</PopReceipt><DequeueCount>%s</DequeueCount>"
             "<MessageText>x</MessageText></QueueMessage></QueueMessagesList>",
             id, receipt, count);
    sqlq_error_clear(err);
    return sqlq_xml_parse_messages(body, strlen(body), l, err);
}

/* Fields from the service are hostile input: an id or receipt that could inject a header or a
 * log line, or a count that would poison on receipt, makes the whole reply a service error. */
static void test_xml_messages_hostile_fields(void **state)
{
    (void)state;
    sqlq_message_list l = {NULL, 0};
    sqlq_error err;
    assert_int_equal(parse_one("AgAA-5974b586_x+/=", "AgAAAAMAAAAAAAAAsGA3ZFE32gE=", "2147483647",
                               &l, &err),
                     SQLQ_OK);
    assert_int_equal(l.count, 1);
    assert_int_equal(l.items[0].dequeue_count, 2147483647L);
    sqlq_message_list_free(&l);
    assert_int_equal(parse_one("id&#13;&#10;X-Injected: 1", "r", "1", &l, &err), SQLQ_E_PARSE);
    assert_non_null(strstr(err.message, "MessageId"));
    assert_int_equal(parse_one("id with space", "r", "1", &l, &err), SQLQ_E_PARSE);
    assert_int_equal(parse_one("id\"q", "r", "1", &l, &err), SQLQ_E_PARSE);
    assert_int_equal(parse_one("id", "r&#10;x", "1", &l, &err), SQLQ_E_PARSE);
    assert_non_null(strstr(err.message, "PopReceipt"));
    char longid[300];
    memset(longid, 'a', 256);
    longid[256] = '\0';
    assert_int_equal(parse_one(longid, "r", "1", &l, &err), SQLQ_E_PARSE);
    longid[255] = '\0';
    assert_int_equal(parse_one(longid, "r", "1", &l, &err), SQLQ_OK);
    sqlq_message_list_free(&l);
    assert_int_equal(parse_one("id", "r", "99999999999999999999", &l, &err), SQLQ_E_PARSE);
    assert_non_null(strstr(err.message, "DequeueCount"));
    assert_int_equal(parse_one("id", "r", "2147483648", &l, &err), SQLQ_E_PARSE);
    assert_int_equal(parse_one("id", "r", "-1", &l, &err), SQLQ_E_PARSE);
    assert_int_equal(parse_one("id", "r", "+3", &l, &err), SQLQ_E_PARSE);
    assert_int_equal(parse_one("id", "r", " 3", &l, &err), SQLQ_E_PARSE);
    assert_int_equal(l.count, 0);
    assert_true(sqlq_message_ref_valid("5974b586-0df3-4e2d-ad0c-18e3892bfca2"));
    assert_false(sqlq_message_ref_valid(""));
    assert_false(sqlq_message_ref_valid(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xml_messages_entities_cdata_and_dates),
        cmocka_unit_test(test_xml_empty_lists),
        cmocka_unit_test(test_xml_malformed_is_a_parse_error),
        cmocka_unit_test(test_xml_queue_list_with_paging),
        cmocka_unit_test(test_xml_error_body),
        cmocka_unit_test(test_xml_escape_edges),
        cmocka_unit_test(test_xml_escape_round_trip),
        cmocka_unit_test(test_xml_http_dates),
        cmocka_unit_test(test_xml_messages_hostile_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
