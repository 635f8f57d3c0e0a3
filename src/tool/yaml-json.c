/* SPDX-License-Identifier: Apache-2.0 */
/*
 * YAML -> JSON on libyaml's event API (not its document API: only events tell an explicit `!!str 80`
 * from a plain `80`, and building jansson values directly lets aliases be resolved with a budget).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "tool/yaml-json.h"

#define TAG_PREFIX "tag:yaml.org,2002:"

static bool in_set(const char *s, const char *const *set) {
	for (; *set; set++)
		if (streq(s, *set))
			return true;
	return false;
}

static const char *const null_set[] = { "", "~", "null", "Null", "NULL", NULL };
static const char *const true_set[] = { "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", NULL };
static const char *const false_set[] = { "n",     "N",     "no",  "No",  "NO",  "false",
					 "False", "FALSE", "off", "Off", "OFF", NULL };
static const char *const inf_set[] = { ".inf",  ".Inf",  ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
				       "-.Inf", "-.INF", ".nan", ".NaN",  ".NAN",  NULL };

/* Go's strconv.ParseInt(s, 0, 64) after go-yaml removed the '_'s: sign, then 0x / 0o / 0b / 0
 * (octal) prefixes or decimal. */
static bool parse_int(const char *s, long long *ret) {
	bool neg = false;
	unsigned base = 10;
	unsigned long long v = 0;

	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (!*s)
		return false;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		base = 16, s += 2;
	else if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O'))
		base = 8, s += 2;
	else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
		base = 2, s += 2;
	else if (s[0] == '0' && s[1])
		base = 8, s += 1;
	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned) (*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned) (*s - 'a' + 10);
		else if (*s >= 'A' && *s <= 'F')
			d = (unsigned) (*s - 'A' + 10);
		else
			return false;
		if (d >= base || v > (ULLONG_MAX - d) / base)
			return false;
		v = v * base + d;
	}
	if (v > (unsigned long long) LLONG_MAX + (neg ? 1 : 0))
		return false;
	*ret = neg ? (long long) (0 - v) : (long long) v;
	return true;
}

/* go-yaml's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static bool float_syntax(const char *s) {
	size_t n;

	if (*s == '+' || *s == '-')
		s++;
	if (*s == '.') {
		n = strspn(s + 1, "0123456789");
		if (n == 0)
			return false;
		s += 1 + n;
	} else {
		n = strspn(s, "0123456789");
		if (n == 0)
			return false;
		s += n;
		if (*s == '.')
			s += 1 + strspn(s + 1, "0123456789");
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		n = strspn(s, "0123456789");
		if (n == 0)
			return false;
		s += n;
	}
	return *s == 0;
}

/* A number the way Go's encoding/json prints a float64: integral values without a fraction. */
static json_t *number_json(double d) {
	if (d == floor(d) && fabs(d) < 1e15)
		return json_integer((json_int_t) d);
	return json_real(d);
}

/* Plain scalar resolution of go-yaml v2 (resolve.go). *ret_error for values JSON cannot hold. */
static json_t *resolve_plain(const char *s, const char **ret_error) {
	_cleanup_free_ char *plain = NULL;
	long long i;
	char *w;

	if (in_set(s, null_set))
		return json_null();
	if (in_set(s, true_set))
		return json_true();
	if (in_set(s, false_set))
		return json_false();
	if (in_set(s, inf_set)) {
		*ret_error = "infinity and NaN cannot be represented in JSON";
		return NULL;
	}
	/* Only a leading digit, sign or dot can start a number. */
	if (!strchr("0123456789+-.", s[0]))
		return json_string(s);
	plain = strdup(s);
	if (!plain)
		return NULL;
	w = plain;
	for (const char *r = s; *r; r++)
		if (*r != '_')
			*w++ = *r;
	*w = 0;
	if (parse_int(plain, &i))
		return json_integer(i);
	if (float_syntax(plain))
		return number_json(strtod(plain, NULL));
	return json_string(s);
}

json_t *yaml_json_scalar(const char *s, size_t len, const char *tag, bool plain, const char **ret_error) {
	_cleanup_free_ char *z = strndup(s, len);
	const char *t;
	json_t *v;

	*ret_error = NULL;
	if (!z)
		return NULL;
	if (memchr(s, 0, len)) {
		*ret_error = "a NUL byte in a scalar";
		return NULL;
	}
	if (!tag)
		return plain ? resolve_plain(z, ret_error) : json_string(z);
	if (streq(tag, "!") || streq(tag, TAG_PREFIX "str"))
		return json_string(z);
	t = startswith(tag, TAG_PREFIX);
	if (!t || !in_set(t, (const char *const[]) { "int", "float", "bool", "null", NULL })) {
		*ret_error = "unsupported tag (only !!str, !!int, !!float, !!bool and !!null)";
		return NULL;
	}
	v = resolve_plain(z, ret_error);
	if (!v)
		return NULL;
	if ((streq(t, "int") && !json_is_integer(v)) || (streq(t, "float") && !json_is_number(v)) ||
	    (streq(t, "bool") && !json_is_boolean(v)) || (streq(t, "null") && !json_is_null(v))) {
		json_decref(v);
		*ret_error = "value does not match its tag";
		return NULL;
	}
	if (streq(t, "float") && json_is_integer(v)) {
		double d = (double) json_integer_value(v);

		json_decref(v);
		v = number_json(d);
	}
	return v;
}

/* ---- the event walk ---- */

typedef struct Anchor {
	char *name;
	json_t *value;
} Anchor;

typedef struct Frame {
	json_t *container;
	bool is_map;
	char *key;      /* pending mapping key */
	bool key_merge; /* the pending key is a plain `<<` */
	json_t *merges; /* mappings to merge at the end (array), NULL if none */
	char *anchor;   /* registered once the container is complete */
} Frame;

typedef struct Walk {
	Frame stack[YAML_JSON_MAX_DEPTH];
	size_t depth;
	json_t *root;
	Anchor *anchors;
	size_t n_anchors;
	size_t nodes;
	char *error;
} Walk;

static int walk_fail(Walk *w, size_t line, const char *fmt, ...) _printf_(3, 4);
static int walk_fail(Walk *w, size_t line, const char *fmt, ...) {
	_cleanup_free_ char *m = NULL;
	va_list ap;

	if (w->error)
		return -EINVAL;
	va_start(ap, fmt);
	if (vasprintf(&m, fmt, ap) < 0)
		m = NULL;
	va_end(ap);
	w->error = strdup_printf("line %zu: %s", line + 1, m ?: "invalid YAML");
	return w->error ? -EINVAL : -ENOMEM;
}

static void anchors_clear(Walk *w) {
	for (size_t i = 0; i < w->n_anchors; i++) {
		free(w->anchors[i].name);
		json_decref(w->anchors[i].value);
	}
	free(w->anchors);
	w->anchors = NULL;
	w->n_anchors = 0;
}

static void frames_clear(Walk *w) {
	for (; w->depth > 0; w->depth--) {
		Frame *f = &w->stack[w->depth - 1];

		json_decref(f->container);
		json_decref(f->merges);
		free(f->key);
		free(f->anchor);
	}
	json_decref(w->root);
	w->root = NULL;
}

static int anchor_set(Walk *w, const char *name, json_t *v) {
	Anchor *n;

	/* A later anchor of the same name replaces the earlier one (YAML 1.1 §3.2.2.2). */
	for (size_t i = 0; i < w->n_anchors; i++)
		if (streq(w->anchors[i].name, name)) {
			json_decref(w->anchors[i].value);
			w->anchors[i].value = json_incref(v);
			return 0;
		}
	n = reallocarray(w->anchors, w->n_anchors + 1, sizeof(Anchor));
	if (!n)
		return -ENOMEM;
	w->anchors = n;
	n[w->n_anchors].name = strdup(name);
	if (!n[w->n_anchors].name)
		return -ENOMEM;
	n[w->n_anchors++].value = json_incref(v);
	return 0;
}

static size_t json_nodes(const json_t *v) {
	size_t n = 1, i;
	const char *k;
	json_t *x;

	if (json_is_array(v))
		json_array_foreach((json_t *) v, i, x)
			n += json_nodes(x);
	else if (json_is_object(v))
		json_object_foreach((json_t *) v, k, x)
			n += json_nodes(x);
	return n;
}

/* The text a scalar key becomes (sigs.k8s.io/yaml turns non-string keys into their JSON text). */
static char *key_string(const json_t *v) {
	if (json_is_string(v))
		return strdup(json_string_value(v));
	if (json_is_integer(v))
		return strdup_printf("%lld", (long long) json_integer_value(v));
	if (json_is_real(v))
		return strdup_printf("%.17g", json_real_value(v));
	if (json_is_boolean(v))
		return strdup(json_is_true(v) ? "true" : "false");
	if (json_is_null(v))
		return strdup("null");
	return NULL;
}

/* Adds a finished value (reference taken over) where it belongs. `merge_key`: v is a plain "<<". */
static int add_value(Walk *w, json_t *v, bool merge_key, size_t line) {
	Frame *f;

	if (w->depth == 0) {
		w->root = v;
		return 0;
	}
	f = &w->stack[w->depth - 1];
	if (!f->is_map) {
		if (json_array_append_new(f->container, v) < 0)
			return -ENOMEM;
		return 0;
	}
	if (!f->key) {
		f->key = key_string(v);
		f->key_merge = merge_key;
		if (!f->key) {
			bool complex = json_is_array(v) || json_is_object(v);

			json_decref(v);
			return complex ? walk_fail(w, line, "a mapping key must be a scalar") : -ENOMEM;
		}
		json_decref(v);
		return 0;
	}
	if (f->key_merge) {
		/* `<<: *a` or `<<: [*a, *b]`: earlier sources win, explicit keys win over all. */
		json_t *srcs = json_is_array(v) ? json_incref(v) : json_pack("[O]", v);
		json_t *x;
		size_t i;

		json_decref(v);
		if (!srcs)
			return -ENOMEM;
		json_array_foreach(srcs, i, x) {
			if (!json_is_object(x)) {
				json_decref(srcs);
				return walk_fail(w, line, "a merge key (<<) takes a mapping or a list of mappings");
			}
		}
		if (!f->merges)
			f->merges = json_array();
		if (!f->merges || json_array_extend(f->merges, srcs) < 0) {
			json_decref(srcs);
			return -ENOMEM;
		}
		json_decref(srcs);
	} else {
		if (json_object_get(f->container, f->key)) {
			json_decref(v);
			return walk_fail(w, line, "key \"%s\" already set in this mapping", f->key);
		}
		if (json_object_set_new(f->container, f->key, v) < 0)
			return -ENOMEM;
	}
	f->key = mfree(f->key);
	f->key_merge = false;
	return 0;
}

static int push(Walk *w, bool is_map, const char *anchor, size_t line) {
	Frame *f;

	if (w->depth >= YAML_JSON_MAX_DEPTH)
		return walk_fail(w, line, "nested deeper than %u levels", YAML_JSON_MAX_DEPTH);
	f = &w->stack[w->depth];
	*f = (Frame) { .is_map = is_map };
	f->container = is_map ? json_object() : json_array();
	if (!f->container)
		return -ENOMEM;
	if (anchor && !(f->anchor = strdup(anchor))) {
		json_decref(f->container);
		return -ENOMEM;
	}
	w->depth++;
	return 0;
}

static int pop(Walk *w, size_t line) {
	Frame f = w->stack[--w->depth];
	int r;

	free(f.key);
	if (f.merges) {
		json_t *src, *x;
		const char *k;
		size_t i;

		json_array_foreach(f.merges, i, src)
			json_object_foreach(src, k, x) {
				if (!json_object_get(f.container, k) && json_object_set(f.container, k, x) < 0) {
					r = -ENOMEM;
					goto fail;
				}
			}
		json_decref(f.merges);
		f.merges = NULL;
	}
	if (f.anchor) {
		r = anchor_set(w, f.anchor, f.container);
		if (r < 0)
			goto fail;
		f.anchor = mfree(f.anchor);
	}
	return add_value(w, f.container, false, line);
fail:
	json_decref(f.container);
	json_decref(f.merges);
	free(f.anchor);
	return r;
}

static int on_event(Walk *w, const yaml_event_t *e) {
	size_t line = e->start_mark.line;
	int r;

	switch (e->type) {
	case YAML_SCALAR_EVENT: {
		const char *tag = (const char *) e->data.scalar.tag, *why = NULL;
		bool plain = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
		json_t *v;

		/* "plain_implicit" with a tag present cannot happen; a tag makes the scalar explicit. */
		v = yaml_json_scalar((const char *) e->data.scalar.value, e->data.scalar.length, tag, plain, &why);
		if (!v)
			return why ? walk_fail(w, line, "\"%.64s\": %s", (const char *) e->data.scalar.value, why)
				   : -ENOMEM;
		if (++w->nodes > YAML_JSON_MAX_NODES) {
			json_decref(v);
			return walk_fail(w, line, "more than %u nodes", YAML_JSON_MAX_NODES);
		}
		if (e->data.scalar.anchor && (r = anchor_set(w, (const char *) e->data.scalar.anchor, v)) < 0) {
			json_decref(v);
			return r;
		}
		return add_value(w, v, plain && !tag && streq((const char *) e->data.scalar.value, "<<"), line);
	}
	case YAML_ALIAS_EVENT: {
		const char *name = (const char *) e->data.alias.anchor;
		json_t *v;

		for (size_t i = 0; i < w->n_anchors; i++) {
			if (!streq(w->anchors[i].name, name))
				continue;
			w->nodes += json_nodes(w->anchors[i].value);
			if (w->nodes > YAML_JSON_MAX_NODES)
				return walk_fail(w, line, "aliases expand to more than %u nodes", YAML_JSON_MAX_NODES);
			v = json_deep_copy(w->anchors[i].value);
			if (!v)
				return -ENOMEM;
			return add_value(w, v, false, line);
		}
		for (size_t i = 0; i < w->depth; i++)
			if (streq_ptr(w->stack[i].anchor, name))
				return walk_fail(w, line, "alias *%s refers to a node that contains it", name);
		return walk_fail(w, line, "unknown anchor *%s", name);
	}
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		bool is_map = e->type == YAML_MAPPING_START_EVENT;
		const char *tag = (const char *) (is_map ? e->data.mapping_start.tag : e->data.sequence_start.tag);
		const char *anchor =
				(const char *) (is_map ? e->data.mapping_start.anchor : e->data.sequence_start.anchor);

		if (tag && !streq(tag, "!") && !streq(tag, is_map ? TAG_PREFIX "map" : TAG_PREFIX "seq"))
			return walk_fail(w, line, "unsupported tag %s", tag);
		if (++w->nodes > YAML_JSON_MAX_NODES)
			return walk_fail(w, line, "more than %u nodes", YAML_JSON_MAX_NODES);
		return push(w, is_map, anchor, line);
	}
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT: return pop(w, line);
	default: return 0;
	}
}

void yaml_docs_free(YamlDoc *d, size_t n) {
	for (size_t i = 0; i < n; i++)
		json_decref(d[i].json);
	free(d);
}

static int docs_append(YamlDoc **docs, size_t *n, json_t *j, unsigned line) {
	YamlDoc *nd = reallocarray(*docs, *n + 1, sizeof(YamlDoc));

	if (!nd) {
		json_decref(j);
		return -ENOMEM;
	}
	*docs = nd;
	nd[*n] = (YamlDoc) { .json = j, .index = (unsigned) *n + 1, .line = line };
	(*n)++;
	return 0;
}

/* A stream of JSON values (kubectl's YAMLOrJSONDecoder does the same for input starting with '{'). */
static int json_stream_parse(const char *buf, size_t len, YamlDoc **ret, size_t *ret_n, char **ret_error) {
	YamlDoc *docs = NULL;
	size_t n = 0, off = 0;
	int r;

	for (;;) {
		json_error_t jerr;
		unsigned line = 1;
		json_t *j;

		while (off < len && strchr(" \t\r\n", buf[off]))
			off++;
		if (off >= len)
			break;
		for (size_t i = 0; i < off; i++)
			line += buf[i] == '\n';
		j = json_loadb(buf + off, len - off, JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
			       &jerr);
		if (!j) {
			*ret_error = strdup_printf("line %u: %s", line + (unsigned) jerr.line - 1, jerr.text);
			yaml_docs_free(docs, n);
			return *ret_error ? -EINVAL : -ENOMEM;
		}
		off += (size_t) jerr.position;
		if (json_is_null(j)) {
			json_decref(j);
			continue;
		}
		r = docs_append(&docs, &n, j, line);
		if (r < 0) {
			yaml_docs_free(docs, n);
			return r;
		}
	}
	*ret = docs;
	*ret_n = n;
	return 0;
}

int yaml_json_parse(const char *buf, size_t len, YamlDoc **ret, size_t *ret_n, char **ret_error) {
	yaml_parser_t parser;
	Walk w = {};
	YamlDoc *docs = NULL;
	size_t n = 0, i = 0;
	unsigned doc_line = 1;
	int r = 0;

	*ret_error = NULL;
	while (i < len && strchr(" \t\r\n", buf[i]))
		i++;
	if (i < len && buf[i] == '{')
		return json_stream_parse(buf, len, ret, ret_n, ret_error);

	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *) buf, len);
	for (;;) {
		yaml_event_t e;

		if (!yaml_parser_parse(&parser, &e)) {
			r = walk_fail(&w, parser.problem_mark.line, "%s%s%s", parser.problem ?: "invalid YAML",
				      parser.context ? " " : "", parser.context ?: "");
			break;
		}
		if (e.type == YAML_DOCUMENT_START_EVENT) {
			doc_line = (unsigned) e.start_mark.line + 1;
			w.nodes = 0;
		} else if (e.type == YAML_DOCUMENT_END_EVENT) {
			json_t *root = TAKE_PTR(w.root);

			anchors_clear(&w);
			if (root && !json_is_null(root))
				r = docs_append(&docs, &n, root, doc_line);
			else
				json_decref(root);
		} else
			r = on_event(&w, &e);
		if (e.type == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&e);
			break;
		}
		yaml_event_delete(&e);
		if (r < 0)
			break;
	}
	yaml_parser_delete(&parser);
	frames_clear(&w);
	anchors_clear(&w);
	if (r < 0) {
		yaml_docs_free(docs, n);
		*ret_error = TAKE_PTR(w.error);
		return r == -EINVAL && !*ret_error ? -ENOMEM : r;
	}
	free(w.error);
	*ret = docs;
	*ret_n = n;
	return 0;
}
