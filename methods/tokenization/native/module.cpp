// CPython bindings of the incremental BPE core: `docket.methods.tokenization._incbpe`.
// Every call that does real work releases the GIL; C++ exceptions become Python exceptions.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core.hpp"
#include "pretok.hpp"

using namespace incbpe;

static PyObject* ImproperError = nullptr;

// ---------------------------------------------------------------- helpers

static bool translate_exception() {
    try {
        throw;
    } catch (const ImproperDictionary& e) {
        PyErr_SetString(ImproperError, e.what());
    } catch (const std::invalid_argument& e) {
        PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::out_of_range& e) {
        PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const std::bad_alloc&) {
        PyErr_NoMemory();
    } catch (const std::exception& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
    }
    return false;
}

// Run `fn` without the GIL; false (with a Python error set) when it threw.
template <class Fn>
static bool without_gil(Fn&& fn) {
    bool ok = true;
    std::exception_ptr error;
    Py_BEGIN_ALLOW_THREADS;
    try {
        fn();
    } catch (...) {
        error = std::current_exception();
        ok = false;
    }
    Py_END_ALLOW_THREADS;
    if (!ok) {
        try {
            std::rethrow_exception(error);
        } catch (...) {
            translate_exception();
        }
    }
    return ok;
}

static bool read_tokens(PyObject* seq, std::vector<std::string>& out) {
    PyObject* fast = PySequence_Fast(seq, "tokens must be a sequence of bytes");
    if (!fast) return false;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    out.reserve(size_t(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* item = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyBytes_Check(item)) {
            PyErr_Format(PyExc_TypeError, "token %zd is %s, not bytes", i, Py_TYPE(item)->tp_name);
            Py_DECREF(fast);
            return false;
        }
        out.emplace_back(PyBytes_AS_STRING(item), size_t(PyBytes_GET_SIZE(item)));
    }
    Py_DECREF(fast);
    return true;
}

struct Buffer {
    Py_buffer view{};
    bool held = false;
    bool get(PyObject* obj) {
        if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) return false;
        held = true;
        return true;
    }
    ~Buffer() {
        if (held) PyBuffer_Release(&view);
    }
    const u8* data() const { return static_cast<const u8*>(view.buf); }
    size_t size() const { return size_t(view.len); }
};

static bool read_rules(PyObject* obj, std::vector<Rule>& out) {
    Buffer b;
    if (!b.get(obj)) return false;
    if (b.size() % 12) {
        PyErr_SetString(PyExc_ValueError, "rules must be packed uint32 (left, right, result) triples");
        return false;
    }
    out.resize(b.size() / 12);
    std::memcpy(out.data(), b.data(), b.size());
    return true;
}

// (tokens, rules) constructor arguments shared by Vocabulary and Reference
static bool read_vocabulary_args(PyObject* args, PyObject* kwargs, std::vector<std::string>& tokens,
                                 std::vector<Rule>& rules) {
    static const char* names[] = {"tokens", "rules", nullptr};
    PyObject *tokens_obj, *rules_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO", const_cast<char**>(names), &tokens_obj,
                                     &rules_obj))
        return false;
    return read_tokens(tokens_obj, tokens) && read_rules(rules_obj, rules);
}

static PyObject* id_list(const std::vector<u32>& ids) {
    PyObject* list = PyList_New(Py_ssize_t(ids.size()));
    if (!list) return nullptr;
    for (size_t i = 0; i < ids.size(); ++i) {
        PyObject* v = ids[i] == UNKNOWN ? PyLong_FromLong(-1) : PyLong_FromUnsignedLong(ids[i]);
        if (!v) {
            Py_DECREF(list);
            return nullptr;
        }
        PyList_SET_ITEM(list, Py_ssize_t(i), v);
    }
    return list;
}

// ---------------------------------------------------------------- Vocabulary

struct VocabObject {
    PyObject_HEAD std::shared_ptr<Vocabulary>* vocab;
};

static void Vocab_dealloc(VocabObject* self) {
    delete self->vocab;
    Py_TYPE(self)->tp_free(reinterpret_cast<PyObject*>(self));
}

static int Vocab_init(VocabObject* self, PyObject* args, PyObject* kwargs) {
    std::vector<std::string> tokens;
    std::vector<Rule> rules;
    if (!read_vocabulary_args(args, kwargs, tokens, rules)) return -1;
    std::shared_ptr<Vocabulary> built;
    if (!without_gil([&] { built = std::make_shared<Vocabulary>(tokens, rules); })) return -1;
    delete self->vocab;
    self->vocab = new std::shared_ptr<Vocabulary>(std::move(built));
    return 0;
}

static Vocabulary* vocab_of(VocabObject* self) {
    if (!self->vocab || !*self->vocab) {
        PyErr_SetString(PyExc_RuntimeError, "Vocabulary is not initialised");
        return nullptr;
    }
    return self->vocab->get();
}

static PyObject* Vocab_encode(VocabObject* self, PyObject* arg) {
    Vocabulary* v = vocab_of(self);
    if (!v) return nullptr;
    Buffer b;
    if (!b.get(arg)) return nullptr;
    std::vector<u32> out;
    if (!without_gil([&] {
            // per-thread scratch: a fresh multi-megabyte buffer per call would page-fault
            static thread_local std::vector<u32> node, ring;
            static thread_local std::vector<u16> unused;
            out.reserve(b.size() / 3 + 8);
            v->encode_piece(b.data(), b.size(), out, node, unused, ring);
            if (node.size() > (size_t(64) << 20)) std::vector<u32>().swap(node);
        }))
        return nullptr;
    return id_list(out);
}

static PyObject* Vocab_count(VocabObject* self, PyObject* arg) {
    Vocabulary* v = vocab_of(self);
    if (!v) return nullptr;
    Buffer b;
    if (!b.get(arg)) return nullptr;
    size_t count = 0;
    if (!without_gil([&] {
            static thread_local std::vector<u32> node, ring, out;
            static thread_local std::vector<u16> unused;
            out.clear();
            v->encode_piece(b.data(), b.size(), out, node, unused, ring);
            count = out.size();
        }))
        return nullptr;
    return PyLong_FromSize_t(count);
}

static PyObject* Vocab_info(VocabObject* self, PyObject*) {
    Vocabulary* v = vocab_of(self);
    if (!v) return nullptr;
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:n,s:n}", "ids", Py_ssize_t(v->n_ids()),
                         "canonical", Py_ssize_t(v->n_canonical()), "states",
                         Py_ssize_t(v->n_states()), "tiles", Py_ssize_t(v->n_tiles()),
                         "candidate_nodes", Py_ssize_t(v->n_candidate_nodes()), "max_token_bytes",
                         Py_ssize_t(v->max_token_bytes()), "memory_bytes",
                         Py_ssize_t(v->memory_bytes()));
}

static PyObject* Vocab_is_canonical(VocabObject* self, PyObject* arg) {
    Vocabulary* v = vocab_of(self);
    if (!v) return nullptr;
    long long id = PyLong_AsLongLong(arg);
    if (id == -1 && PyErr_Occurred()) return nullptr;
    return PyBool_FromLong(id >= 0 && v->canonical(u32(id)));
}

static PyObject* Vocab_take_steps(VocabObject* self, PyObject*) {
    Vocabulary* v = vocab_of(self);
    if (!v) return nullptr;
    unsigned long long steps = v->centroid_steps;
    v->centroid_steps = 0;
    return PyLong_FromUnsignedLongLong(steps);
}

static PyMethodDef Vocab_methods[] = {
    {"encode", (PyCFunction)Vocab_encode, METH_O,
     "BPE of bytes as one piece (no pre-tokenization); -1 for bytes outside the vocabulary."},
    {"count", (PyCFunction)Vocab_count, METH_O,
     "Number of tokens of `encode(data)`, without building the list."},
    {"info", (PyCFunction)Vocab_info, METH_NOARGS, "Sizes of the built structures."},
    {"is_canonical", (PyCFunction)Vocab_is_canonical, METH_O,
     "Whether BPE can produce token `id` (its own bytes encode to it)."},
    {"take_centroid_steps", (PyCFunction)Vocab_take_steps, METH_NOARGS,
     "Centroid-search steps since the last call (not thread-safe; for tests)."},
    {nullptr, nullptr, 0, nullptr}};

static PyTypeObject VocabType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ---------------------------------------------------------------- Pipeline

struct PipelineObject {
    PyObject_HEAD PyObject* vocab_ref;
    Pipeline* pipe;
    // the int object of every token id, made on the first streamed feed: a stream hands out its
    // ids a few at a time between native steps, and allocating a fresh int for each would
    // fill the caches the next step's tables need with new memory
    PyObject* ids;
};

static void Pipeline_dealloc(PipelineObject* self) {
    delete self->pipe;
    Py_XDECREF(self->vocab_ref);
    Py_XDECREF(self->ids);
    Py_TYPE(self)->tp_free(reinterpret_cast<PyObject*>(self));
}

static int Pipeline_init(PipelineObject* self, PyObject* args, PyObject* kwargs) {
    static const char* names[] = {"vocab", "split", "unknown_id", "fuse_unknown",
                                  "whole_piece_lookup", nullptr};
    PyObject* vocab_obj;
    int split = 0, fuse = 0, whole = 0;
    long long unknown_id = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!|iLpp", const_cast<char**>(names),
                                     &VocabType, &vocab_obj, &split, &unknown_id, &fuse, &whole))
        return -1;
    if (split < 0 || split > 3) {
        PyErr_SetString(PyExc_ValueError, "split must be 0 (whole), 1 (gpt2), 2 (cl100k) or 3 (o200k)");
        return -1;
    }
    Vocabulary* v = vocab_of(reinterpret_cast<VocabObject*>(vocab_obj));
    if (!v) return -1;
    PipelineOptions options;
    options.split = Split(split);
    options.unknown_id = unknown_id < 0 ? NONE : u32(unknown_id);
    options.fuse_unknown = fuse;
    options.whole_piece_lookup = whole;
    Pipeline* made = nullptr;
    if (!without_gil([&] { made = new Pipeline(*v, options); })) return -1;
    delete self->pipe;
    self->pipe = made;
    Py_XDECREF(self->vocab_ref);
    Py_INCREF(vocab_obj);
    self->vocab_ref = vocab_obj;
    return 0;
}

static Pipeline* pipe_of(PipelineObject* self) {
    if (!self->pipe) PyErr_SetString(PyExc_RuntimeError, "Pipeline is not initialised");
    return self->pipe;
}

static PyObject* Pipeline_encode(PipelineObject* self, PyObject* args, PyObject* kwargs) {
    static const char* names[] = {"data", "eof", nullptr};
    PyObject* data;
    int eof = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p", const_cast<char**>(names), &data, &eof))
        return nullptr;
    Pipeline* p = pipe_of(self);
    if (!p) return nullptr;
    Buffer b;
    if (!b.get(data)) return nullptr;
    std::vector<u32> out;
    size_t consumed = 0;
    if (!without_gil([&] { out = p->encode(b.data(), b.size(), eof, &consumed); })) return nullptr;
    PyObject* list = id_list(out);
    if (!list || eof) return list;
    return Py_BuildValue("(Nn)", list, Py_ssize_t(consumed));
}

static PyObject* Pipeline_encode_pieces(PipelineObject* self, PyObject* args) {
    PyObject *data, *ends;
    if (!PyArg_ParseTuple(args, "OO", &data, &ends)) return nullptr;
    Pipeline* p = pipe_of(self);
    if (!p) return nullptr;
    Buffer b, e;
    if (!b.get(data) || !e.get(ends)) return nullptr;
    if (e.size() % 8) {
        PyErr_SetString(PyExc_ValueError, "ends must be packed uint64 piece end offsets");
        return nullptr;
    }
    size_t n = e.size() / 8;
    std::vector<u64> piece_ends(n);
    std::memcpy(piece_ends.data(), e.data(), e.size());
    if (n && piece_ends.back() > b.size()) {
        PyErr_SetString(PyExc_ValueError, "a piece ends past the data");
        return nullptr;
    }
    std::vector<u32> out;
    if (!without_gil([&] { out = p->encode_pieces(b.data(), piece_ends.data(), n); }))
        return nullptr;
    return id_list(out);
}

static PyMethodDef Pipeline_methods[] = {
    {"encode", (PyCFunction)(void (*)(void))Pipeline_encode, METH_VARARGS | METH_KEYWORDS,
     "encode(data, eof=True): ids of UTF-8 text; with eof=False, (ids of the certain pieces, "
     "bytes they cover)."},
    {"encode_pieces", (PyCFunction)Pipeline_encode_pieces, METH_VARARGS,
     "encode_pieces(data, ends): BPE per pre-split piece (ends: packed uint64 byte offsets)."},
    {nullptr, nullptr, 0, nullptr}};

static PyTypeObject PipelineType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ---------------------------------------------------------------- streams (shared)

// A stream object: its native stream, the Python object that owns what the stream reads (the
// Vocabulary or the Pipeline), and a flag set (under the GIL) while a call runs without it.
template <class S>
struct StreamHolder {
    PyObject_HEAD PyObject* owner;
    S* stream;
    int busy;
};

template <class Holder>
static void holder_dealloc(Holder* self) {
    delete self->stream;
    Py_XDECREF(self->owner);
    Py_TYPE(self)->tp_free(reinterpret_cast<PyObject*>(self));
}

// Replace the held stream by `made`, keeping `owner` alive instead of the previous owner.
template <class Holder, class S>
static void holder_adopt(Holder* self, S* made, PyObject* owner) {
    delete self->stream;
    self->stream = made;
    Py_XDECREF(self->owner);
    Py_INCREF(owner);
    self->owner = owner;
}

// The held stream, or nullptr with a Python error when it is missing or in use.
template <class Holder>
static auto* holder_stream(Holder* self, const char* type) {
    if (!self->stream) {
        PyErr_Format(PyExc_RuntimeError, "%s is not initialised", type);
        return decltype(self->stream)(nullptr);
    }
    if (self->busy) {
        PyErr_Format(PyExc_RuntimeError, "this %s is in use by another thread", type);
        return decltype(self->stream)(nullptr);
    }
    return self->stream;
}

// ---------------------------------------------------------------- Stream

using StreamObject = StreamHolder<Stream>;

static int Stream_init(StreamObject* self, PyObject* args, PyObject* kwargs) {
    static const char* names[] = {"vocab", "eager", nullptr};
    PyObject* vocab_obj;
    int eager = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!|p", const_cast<char**>(names), &VocabType,
                                     &vocab_obj, &eager))
        return -1;
    Vocabulary* v = vocab_of(reinterpret_cast<VocabObject*>(vocab_obj));
    if (!v) return -1;
    holder_adopt(self, new Stream(*v, eager), vocab_obj);
    return 0;
}

static Stream* stream_of(StreamObject* self) { return holder_stream(self, "Stream"); }

template <class Fn>
static bool stream_call(StreamObject* self, Fn&& fn) {
    self->busy = 1;
    bool ok = without_gil(fn);
    self->busy = 0;
    return ok;
}

static PyObject* Stream_feed(StreamObject* self, PyObject* arg) {
    Stream* s = stream_of(self);
    if (!s) return nullptr;
    Buffer b;
    if (!b.get(arg)) return nullptr;
    if (!stream_call(self, [&] { s->feed(b.data(), b.size()); })) return nullptr;
    Py_RETURN_NONE;
}

static PyObject* Stream_feed_timed(StreamObject* self, PyObject* arg) {
    Stream* s = stream_of(self);
    if (!s) return nullptr;
    Buffer b;
    if (!b.get(arg)) return nullptr;
    std::vector<u32> ns;
    if (!stream_call(self, [&] { ns = s->feed_timed(b.data(), b.size()); })) return nullptr;
    return PyBytes_FromStringAndSize(reinterpret_cast<const char*>(ns.data()),
                                     Py_ssize_t(ns.size() * 4));
}

static PyObject* Stream_tokens_of_prefix(StreamObject* self, PyObject* arg) {
    Stream* s = stream_of(self);
    if (!s) return nullptr;
    Py_ssize_t prefix = PyLong_AsSsize_t(arg);
    if (prefix == -1 && PyErr_Occurred()) return nullptr;
    if (prefix < 0 || size_t(prefix) > s->size()) {
        PyErr_Format(PyExc_IndexError, "prefix %zd outside 0..%zu", prefix, s->size());
        return nullptr;
    }
    std::vector<u32> out;
    if (!stream_call(self, [&] { out = s->tokens_of_prefix(size_t(prefix)); })) return nullptr;
    return id_list(out);
}

static PyObject* Stream_emit(StreamObject* self, PyObject*) {
    Stream* s = stream_of(self);
    if (!s) return nullptr;
    return id_list(s->take_emitted());
}

static PyObject* Stream_flush(StreamObject* self, PyObject*) {
    Stream* s = stream_of(self);
    if (!s) return nullptr;
    s->finish();
    return id_list(s->take_emitted());
}

static PyObject* Stream_reset(StreamObject* self, PyObject*) {
    Stream* s = stream_of(self);
    if (!s) return nullptr;
    s->reset();
    Py_RETURN_NONE;
}

static Py_ssize_t Stream_len(StreamObject* self) {
    Stream* s = stream_of(self);
    return s ? Py_ssize_t(s->size()) : -1;
}

static PyObject* Stream_pending(StreamObject* self, void*) {
    Stream* s = stream_of(self);
    return s ? PyLong_FromSize_t(s->pending_bytes()) : nullptr;
}

static PyObject* Stream_max_pending(StreamObject* self, void*) {
    Stream* s = stream_of(self);
    return s ? PyLong_FromSize_t(s->max_pending_bytes()) : nullptr;
}

static PyObject* Stream_finished(StreamObject* self, void*) {
    Stream* s = stream_of(self);
    return s ? PyBool_FromLong(s->finished()) : nullptr;
}

static PyMethodDef Stream_methods[] = {
    {"feed", (PyCFunction)Stream_feed, METH_O, "Append bytes to the stream."},
    {"feed_timed", (PyCFunction)Stream_feed_timed, METH_O,
     "Append bytes one at a time; packed uint32 nanoseconds per byte."},
    {"tokens_of_prefix", (PyCFunction)Stream_tokens_of_prefix, METH_O,
     "BPE of the first `i` bytes (-1: a byte outside the vocabulary)."},
    {"emit", (PyCFunction)Stream_emit, METH_NOARGS,
     "Tokens whose boundaries became certain since the last emit()."},
    {"flush", (PyCFunction)Stream_flush, METH_NOARGS,
     "End of stream: the remaining tokens (feed() then raises until reset())."},
    {"reset", (PyCFunction)Stream_reset, METH_NOARGS, "Start a new, empty stream."},
    {nullptr, nullptr, 0, nullptr}};

static PyGetSetDef Stream_getset[] = {
    {"pending_bytes", (getter)Stream_pending, nullptr, "Bytes fed but not yet emitted.", nullptr},
    {"max_pending_bytes", (getter)Stream_max_pending, nullptr,
     "Most bytes ever held undecided (eager streams).", nullptr},
    {"finished", (getter)Stream_finished, nullptr, "Whether flush() was called.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

static PySequenceMethods Stream_sequence = {(lenfunc)Stream_len};

static PyTypeObject StreamType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ---------------------------------------------------------------- PipelineStream

using PieceStreamObject = StreamHolder<PieceStream>;

static int PieceStream_init(PieceStreamObject* self, PyObject* args, PyObject* kwargs) {
    static const char* names[] = {"pipeline", nullptr};
    PyObject* pipeline_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!", const_cast<char**>(names),
                                     &PipelineType, &pipeline_obj))
        return -1;
    Pipeline* p = pipe_of(reinterpret_cast<PipelineObject*>(pipeline_obj));
    if (!p) return -1;
    holder_adopt(self, new PieceStream(*p), pipeline_obj);
    return 0;
}

static PieceStream* piece_stream_of(PieceStreamObject* self) {
    return holder_stream(self, "PipelineStream");
}

// The tuple of the int objects 0 .. n_ids - 1 of the pipeline's vocabulary (made once).
static PyObject* id_objects(PipelineObject* pipeline) {
    if (pipeline->ids) return pipeline->ids;
    size_t n = pipeline->pipe->vocab().n_ids();
    PyObject* ids = PyTuple_New(Py_ssize_t(n));
    if (!ids) return nullptr;
    for (size_t i = 0; i < n; ++i) {
        PyObject* v = PyLong_FromSize_t(i);
        if (!v) {
            Py_DECREF(ids);
            return nullptr;
        }
        PyTuple_SET_ITEM(ids, Py_ssize_t(i), v);
    }
    pipeline->ids = ids;
    return ids;
}

// Append ids to a Python list, sharing the int objects of `objects` (-1 for UNKNOWN); false
// (with a Python error set) on failure.
static bool append_ids(PyObject* list, const std::vector<u32>& ids, PyObject* objects) {
    Py_ssize_t known = PyTuple_GET_SIZE(objects);
    for (u32 id : ids) {
        PyObject* v;
        if (id < u64(known)) {
            v = PyTuple_GET_ITEM(objects, Py_ssize_t(id));
            Py_INCREF(v);
        } else {
            v = id == UNKNOWN ? PyLong_FromLong(-1) : PyLong_FromUnsignedLong(id);
            if (!v) return false;
        }
        int failed = PyList_Append(list, v);
        Py_DECREF(v);
        if (failed) return false;
    }
    return true;
}

static PyObject* shared_id_list(const std::vector<u32>& ids, PyObject* objects) {
    PyObject* list = PyList_New(0);
    if (list && !append_ids(list, ids, objects)) Py_CLEAR(list);
    return list;
}

// feed + take of a held stream without the GIL; the certain ids appended to `into` as the
// vocabulary's int objects (-1 for an unknown byte); nullptr with a Python error on failure
template <class Holder>
static PyObject* feed_into(Holder* self, const char* type, PyObject* data, PyObject* into) {
    auto* s = holder_stream(self, type);
    if (!s) return nullptr;
    Buffer b;
    if (!b.get(data)) return nullptr;
    std::vector<u32> out;
    self->busy = 1;
    bool ok = without_gil([&] {
        s->feed(b.data(), b.size());
        s->take(out);
    });
    self->busy = 0;
    if (!ok) return nullptr;
    PyObject* objects = id_objects(reinterpret_cast<PipelineObject*>(self->owner));
    if (!objects || !append_ids(into, out, objects)) return nullptr;
    return PyLong_FromSize_t(out.size());
}

// finish + take of a held stream without the GIL: the remaining ids as a new list
template <class Holder>
static PyObject* finish_ids(Holder* self, const char* type) {
    auto* s = holder_stream(self, type);
    if (!s) return nullptr;
    std::vector<u32> out;
    self->busy = 1;
    bool ok = without_gil([&] {
        s->finish();
        s->take(out);
    });
    self->busy = 0;
    if (!ok) return nullptr;
    PyObject* objects = id_objects(reinterpret_cast<PipelineObject*>(self->owner));
    return objects ? shared_id_list(out, objects) : nullptr;
}

// feed(data, into=None) -> the ids that became certain (feed + take in one call); with a
// list `into`, they are appended to it instead and their number is returned
static PyObject* PieceStream_feed(PieceStreamObject* self, PyObject* args) {
    PyObject *data, *into = Py_None;
    if (!PyArg_ParseTuple(args, "O|O", &data, &into)) return nullptr;
    if (into != Py_None && !PyList_Check(into)) {
        PyErr_SetString(PyExc_TypeError, "into must be a list");
        return nullptr;
    }
    if (into != Py_None) return feed_into(self, "PipelineStream", data, into);
    PyObject* list = PyList_New(0);
    if (!list) return nullptr;
    PyObject* count = feed_into(self, "PipelineStream", data, list);
    if (!count) {
        Py_DECREF(list);
        return nullptr;
    }
    Py_DECREF(count);
    return list;
}

static PyObject* PieceStream_finish(PieceStreamObject* self, PyObject*) {
    return finish_ids(self, "PipelineStream");
}

static PyObject* PieceStream_reset(PieceStreamObject* self, PyObject*) {
    PieceStream* s = piece_stream_of(self);
    if (!s) return nullptr;
    s->reset();
    Py_RETURN_NONE;
}

static PyObject* PieceStream_pending(PieceStreamObject* self, void*) {
    PieceStream* s = piece_stream_of(self);
    return s ? PyLong_FromSize_t(s->pending_bytes()) : nullptr;
}

static PyObject* PieceStream_window(PieceStreamObject* self, void*) {
    PieceStream* s = piece_stream_of(self);
    return s ? PyLong_FromSize_t(s->window_bytes()) : nullptr;
}

static PyObject* PieceStream_max_eager_pending(PieceStreamObject* self, void*) {
    PieceStream* s = piece_stream_of(self);
    return s ? PyLong_FromSize_t(s->max_eager_pending()) : nullptr;
}

static PyMethodDef PieceStream_methods[] = {
    {"feed", (PyCFunction)PieceStream_feed, METH_VARARGS,
     "feed(data, into=None): append UTF-8 bytes (a sequence cut between parts waits for its "
     "end); returns the ids that became certain, or with a list `into` appends them to it and "
     "returns how many."},
    {"finish", (PyCFunction)PieceStream_finish, METH_NOARGS,
     "End of the text: the remaining ids; the stream is then empty, ready for a new text."},
    {"reset", (PyCFunction)PieceStream_reset, METH_NOARGS, "Drop everything fed."},
    {nullptr, nullptr, 0, nullptr}};

static PyGetSetDef PieceStream_getset[] = {
    {"pending_bytes", (getter)PieceStream_pending, nullptr,
     "Bytes fed whose ids are not out yet.", nullptr},
    {"window_bytes", (getter)PieceStream_window, nullptr,
     "Bytes the split window holds (closed pieces not yet dropped, the open piece's head and "
     "tail, text not yet split).", nullptr},
    {"max_eager_pending", (getter)PieceStream_max_eager_pending, nullptr,
     "Most bytes of an open piece the eager encoder ever held undecided.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

static PyTypeObject PieceStreamType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ---------------------------------------------------------------- TextStream

using TextStreamObject = StreamHolder<TextStream>;

static int TextStream_init(TextStreamObject* self, PyObject* args, PyObject* kwargs) {
    static const char* names[] = {"pipeline", "added", "add_prefix_space", "collect", nullptr};
    PyObject *pipeline_obj, *added_obj;
    int prefix_space = 0, collect = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O|pp", const_cast<char**>(names),
                                     &PipelineType, &pipeline_obj, &added_obj, &prefix_space,
                                     &collect))
        return -1;
    Pipeline* p = pipe_of(reinterpret_cast<PipelineObject*>(pipeline_obj));
    if (!p) return -1;
    PyObject* fast = PySequence_Fast(added_obj, "added must be a sequence of (bytes, id, allowed)");
    if (!fast) return -1;
    std::vector<TextStream::Added> added;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); ++i) {
        const char* content;
        Py_ssize_t size;
        unsigned long id;
        int allowed;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "y#kp", &content, &size, &id,
                              &allowed)) {
            Py_DECREF(fast);
            return -1;
        }
        added.push_back({std::string(content, size_t(size)), u32(id), allowed != 0});
    }
    Py_DECREF(fast);
    TextStream* made = nullptr;
    try {
        made = new TextStream(*p, std::move(added), prefix_space != 0, collect != 0);
    } catch (...) {
        translate_exception();
        return -1;
    }
    holder_adopt(self, made, pipeline_obj);
    return 0;
}

static TextStream* text_stream_of(TextStreamObject* self) {
    return holder_stream(self, "TextStream");
}

// feed(data, into): append UTF-8 bytes; the ids that became certain are appended to the list
// `into` (SEGMENT marks as 0xFFFFFFFE); returns how many
static PyObject* TextStream_feed(TextStreamObject* self, PyObject* const* args, Py_ssize_t n) {
    if (n != 2 || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "feed(data, into): into must be a list");
        return nullptr;
    }
    return feed_into(self, "TextStream", args[0], args[1]);
}

static PyObject* TextStream_finish(TextStreamObject* self, PyObject*) {
    return finish_ids(self, "TextStream");
}

static PyObject* TextStream_take_cut(TextStreamObject* self, PyObject*) {
    TextStream* s = text_stream_of(self);
    if (!s) return nullptr;
    std::string cut = s->take_cut();
    return PyBytes_FromStringAndSize(cut.data(), Py_ssize_t(cut.size()));
}

static PyObject* TextStream_take_segments(TextStreamObject* self, PyObject*) {
    TextStream* s = text_stream_of(self);
    if (!s) return nullptr;
    std::vector<std::string> segments = s->take_segments();
    PyObject* list = PyList_New(Py_ssize_t(segments.size()));
    if (!list) return nullptr;
    for (size_t i = 0; i < segments.size(); ++i) {
        PyObject* b = PyBytes_FromStringAndSize(segments[i].data(), Py_ssize_t(segments[i].size()));
        if (!b) {
            Py_DECREF(list);
            return nullptr;
        }
        PyList_SET_ITEM(list, Py_ssize_t(i), b);
    }
    return list;
}

static PyObject* TextStream_pending(TextStreamObject* self, void*) {
    TextStream* s = text_stream_of(self);
    return s ? PyLong_FromSize_t(s->pending_bytes()) : nullptr;
}

static PyObject* TextStream_window(TextStreamObject* self, void*) {
    TextStream* s = text_stream_of(self);
    return s ? PyLong_FromSize_t(s->pieces().window_bytes()) : nullptr;
}

static PyMethodDef TextStream_methods[] = {
    {"feed", (PyCFunction)(void (*)(void))TextStream_feed, METH_FASTCALL,
     "feed(data, into): append UTF-8 bytes (invalid sequences become U+FFFD, a sequence cut "
     "between parts waits for its end); appends the ids that became certain to the list `into` "
     "and returns how many."},
    {"finish", (PyCFunction)TextStream_finish, METH_NOARGS,
     "End of the text: the remaining ids; the stream is then empty, ready for a new text."},
    {"take_cut", (PyCFunction)TextStream_take_cut, METH_NOARGS,
     "The bytes of a UTF-8 sequence cut off at the end of the last part, removed."},
    {"take_segments", (PyCFunction)TextStream_take_segments, METH_NOARGS,
     "collect=True: the closed segments' bytes, one per SEGMENT mark, removed."},
    {nullptr, nullptr, 0, nullptr}};

static PyGetSetDef TextStream_getset[] = {
    {"pending_bytes", (getter)TextStream_pending, nullptr,
     "Bytes fed whose ids are not out yet (a cut sequence, held text, the open piece's).",
     nullptr},
    {"window_bytes", (getter)TextStream_window, nullptr,
     "Bytes the split window of the open segment holds.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

static PyTypeObject TextStreamType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ---------------------------------------------------------------- Reference (standard BPE)

struct ReferenceObject {
    PyObject_HEAD MergeTable* table;
};

static void Reference_dealloc(ReferenceObject* self) {
    delete self->table;
    Py_TYPE(self)->tp_free(reinterpret_cast<PyObject*>(self));
}

static int Reference_init(ReferenceObject* self, PyObject* args, PyObject* kwargs) {
    std::vector<std::string> tokens;
    std::vector<Rule> rules;
    if (!read_vocabulary_args(args, kwargs, tokens, rules)) return -1;
    MergeTable* made = nullptr;
    if (!without_gil([&] { made = new MergeTable(tokens, rules); })) return -1;
    delete self->table;
    self->table = made;
    return 0;
}

static PyObject* Reference_encode(ReferenceObject* self, PyObject* arg) {
    if (!self->table) {
        PyErr_SetString(PyExc_RuntimeError, "Reference is not initialised");
        return nullptr;
    }
    Buffer b;
    if (!b.get(arg)) return nullptr;
    std::vector<u32> out;
    std::string data(reinterpret_cast<const char*>(b.data()), b.size());
    if (!without_gil([&] { out = self->table->encode(data); })) return nullptr;
    return id_list(out);
}

static PyObject* Reference_canonical_rules(ReferenceObject* self, PyObject*) {
    if (!self->table) {
        PyErr_SetString(PyExc_RuntimeError, "Reference is not initialised");
        return nullptr;
    }
    std::vector<CanonicalRule> rules;
    if (!without_gil([&] { rules = self->table->canonical_rules(); })) return nullptr;
    return PyBytes_FromStringAndSize(reinterpret_cast<const char*>(rules.data()),
                                     Py_ssize_t(rules.size() * sizeof(CanonicalRule)));
}

static PyMethodDef Reference_methods[] = {
    {"encode", (PyCFunction)Reference_encode, METH_O,
     "Standard heap BPE of bytes as one piece (-1: a byte outside the vocabulary)."},
    {"canonical_rules", (PyCFunction)Reference_canonical_rules, METH_NOARGS,
     "Packed uint32 (token, pre, suc, priority) of every canonical multi-byte token."},
    {nullptr, nullptr, 0, nullptr}};

static PyTypeObject ReferenceType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ---------------------------------------------------------------- module functions

static PyObject* mod_split(PyObject*, PyObject* args, PyObject* kwargs) {
    static const char* names[] = {"kind", "data", "eof", nullptr};
    int kind;
    PyObject* data;
    int eof = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iO|p", const_cast<char**>(names), &kind,
                                     &data, &eof))
        return nullptr;
    if (kind < 0 || kind > 3) {
        PyErr_SetString(PyExc_ValueError, "kind must be 0..3");
        return nullptr;
    }
    Buffer b;
    if (!b.get(data)) return nullptr;
    std::vector<u32> ends;
    if (!without_gil([&] {
            Decoded text;
            text.decode(b.data(), b.size());
            std::vector<u32> cps;
            split_pieces(Split(kind), text, eof, cps);
            for (u32 e : cps) ends.push_back(text.offset[e]);
        }))
        return nullptr;
    return id_list(ends);
}

static PyObject* mod_split_open(PyObject*, PyObject* args) {
    int kind;
    PyObject* data;
    if (!PyArg_ParseTuple(args, "iO", &kind, &data)) return nullptr;
    if (kind < 0 || kind > 3) {
        PyErr_SetString(PyExc_ValueError, "kind must be 0..3");
        return nullptr;
    }
    Buffer b;
    if (!b.get(data)) return nullptr;
    std::vector<u32> ends;
    long long open_start = -1, floor = -1;
    if (!without_gil([&] {
            Decoded text;
            text.decode(b.data(), b.size());
            std::vector<u32> prev_newline, prev_lower, cps;
            extend_tracks(text, prev_newline, prev_lower);
            size_t cp_floor = 0;
            size_t open = scan_pieces(Split(kind), text, 0, false, cps, &cp_floor, nullptr,
                                      prev_newline.data(), prev_lower.data());
            for (u32 e : cps) ends.push_back(text.offset[e]);
            if (open < text.cp.size()) {
                open_start = text.offset[open];
                floor = text.offset[cp_floor];
            }
        }))
        return nullptr;
    PyObject* list = id_list(ends);
    if (!list) return nullptr;
    return Py_BuildValue("(NLL)", list, open_start, floor);
}

static PyObject* mod_rules_from_ranks(PyObject*, PyObject* arg) {
    // Each token's rule is the last merge of tiktoken's rank BPE over its own bytes (lowest
    // rank first, leftmost on ties); tokens that BPE cannot produce get no rule.
    std::vector<std::string> tokens;
    if (!read_tokens(arg, tokens)) return nullptr;
    std::vector<Rule> rules;
    if (!without_gil([&] {
            std::unordered_map<std::string_view, u32> rank;
            rank.reserve(tokens.size() * 2);
            for (u32 r = 0; r < tokens.size(); ++r)
                if (!tokens[r].empty()) rank.emplace(tokens[r], r);
            std::vector<std::pair<size_t, size_t>> parts;  // [start, end) in the token
            std::vector<u32> pair;
            for (u32 r = 0; r < tokens.size(); ++r) {
                const std::string& t = tokens[r];
                if (t.size() < 2 || t.size() > MAX_TOKEN_BYTES) continue;
                std::string_view view(t);
                parts.clear();
                for (size_t i = 0; i < t.size(); ++i) parts.push_back({i, i + 1});
                auto rank_of = [&](size_t a, size_t b) -> u32 {
                    auto it = rank.find(view.substr(a, b - a));
                    return it == rank.end() ? NONE : it->second;
                };
                bool atoms = true;
                for (auto& p : parts) atoms &= rank_of(p.first, p.second) != NONE;
                if (!atoms) continue;
                // pair[i]: rank of parts[i] + parts[i + 1]; only the merged pair's neighbours
                // change after a merge
                pair.resize(parts.size() - 1);
                for (size_t i = 0; i + 1 < parts.size(); ++i)
                    pair[i] = rank_of(parts[i].first, parts[i + 1].second);
                u32 left = NONE, right = NONE;
                while (parts.size() > 1) {
                    u32 best = NONE;
                    size_t at = 0;
                    for (size_t i = 0; i < pair.size(); ++i)
                        if (pair[i] < best) {
                            best = pair[i];
                            at = i;
                        }
                    if (best == NONE) break;
                    left = rank_of(parts[at].first, parts[at].second);
                    right = rank_of(parts[at + 1].first, parts[at + 1].second);
                    parts[at].second = parts[at + 1].second;
                    parts.erase(parts.begin() + at + 1);
                    pair.erase(pair.begin() + at);
                    if (at > 0) pair[at - 1] = rank_of(parts[at - 1].first, parts[at].second);
                    if (at + 1 < parts.size()) pair[at] = rank_of(parts[at].first, parts[at + 1].second);
                }
                if (parts.size() == 1 && rank_of(0, t.size()) == r) rules.push_back({left, right, r});
            }
        }))
        return nullptr;
    return PyBytes_FromStringAndSize(reinterpret_cast<const char*>(rules.data()),
                                     Py_ssize_t(rules.size() * sizeof(Rule)));
}

static PyObject* mod_unicode_class(PyObject*, PyObject* arg) {
    long cp = PyLong_AsLong(arg);
    if (cp == -1 && PyErr_Occurred()) return nullptr;
    return PyLong_FromLong(cp < 0 ? 0 : unicode_class(u32(cp)));
}

static PyMethodDef module_methods[] = {
    {"split", (PyCFunction)(void (*)(void))mod_split, METH_VARARGS | METH_KEYWORDS,
     "split(kind, data, eof=True): byte offsets of the piece ends of UTF-8 text."},
    {"split_open", (PyCFunction)mod_split_open, METH_VARARGS,
     "split_open(kind, data): (byte ends of the pieces certain whatever follows, start of the "
     "open piece, the end of its certain prefix); -1, -1 when no piece is open."},
    {"rules_from_ranks", (PyCFunction)mod_rules_from_ranks, METH_O,
     "Packed uint32 (left, right, result) rules of tiktoken-style ranks (index = rank)."},
    {"unicode_class", (PyCFunction)mod_unicode_class, METH_O,
     "Class bits of a code point (L=1 N=2 S=4 Lu=8 Ll=16 Lt=32 Lm=64 Lo=128 M=256)."},
    {nullptr, nullptr, 0, nullptr}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_incbpe",
                                        "Native core of incremental BPE (C++17).", -1,
                                        module_methods};

template <class T>
static bool ready(PyTypeObject& type, const char* name, const char* doc, initproc init,
                  destructor dealloc, PyMethodDef* methods) {
    type.tp_name = name;
    type.tp_doc = doc;
    type.tp_basicsize = sizeof(T);
    type.tp_flags = Py_TPFLAGS_DEFAULT;
    type.tp_new = PyType_GenericNew;
    type.tp_init = init;
    type.tp_dealloc = dealloc;
    type.tp_methods = methods;
    return PyType_Ready(&type) == 0;
}

PyMODINIT_FUNC PyInit__incbpe(void) {
    StreamType.tp_getset = Stream_getset;
    StreamType.tp_as_sequence = &Stream_sequence;
    PieceStreamType.tp_getset = PieceStream_getset;
    TextStreamType.tp_getset = TextStream_getset;
    if (!ready<VocabObject>(VocabType, "_incbpe.Vocabulary",
                            "Vocabulary(tokens, rules): normalised dictionary, automaton, forest.",
                            (initproc)Vocab_init, (destructor)Vocab_dealloc, Vocab_methods) ||
        !ready<PipelineObject>(PipelineType, "_incbpe.Pipeline",
                               "Pipeline(vocab, split, unknown_id=-1, fuse_unknown=False, "
                               "whole_piece_lookup=False): pre-tokenize, then BPE per piece.",
                               (initproc)Pipeline_init, (destructor)Pipeline_dealloc,
                               Pipeline_methods) ||
        !ready<StreamObject>(StreamType, "_incbpe.Stream",
                             "Stream(vocab, eager=True): incremental BPE of a byte stream.",
                             (initproc)Stream_init, (destructor)holder_dealloc<StreamObject>,
                             Stream_methods) ||
        !ready<PieceStreamObject>(PieceStreamType, "_incbpe.PipelineStream",
                                  "PipelineStream(pipeline): the pipeline over text arriving in "
                                  "parts, eager output.",
                                  (initproc)PieceStream_init,
                                  (destructor)holder_dealloc<PieceStreamObject>,
                                  PieceStream_methods) ||
        !ready<TextStreamObject>(TextStreamType, "_incbpe.TextStream",
                                 "TextStream(pipeline, added, add_prefix_space=False, "
                                 "collect=False): UTF-8 repair, added tokens and the streamed "
                                 "pipeline over text arriving in parts.",
                                 (initproc)TextStream_init,
                                 (destructor)holder_dealloc<TextStreamObject>,
                                 TextStream_methods) ||
        !ready<ReferenceObject>(ReferenceType, "_incbpe.Reference",
                                "Reference(tokens, rules): standard heap BPE (merge list).",
                                (initproc)Reference_init, (destructor)Reference_dealloc,
                                Reference_methods))
        return nullptr;
    PyObject* m = PyModule_Create(&module_def);
    if (!m) return nullptr;
    ImproperError = PyErr_NewExceptionWithDoc(
        "_incbpe.ImproperDictionary",
        "A merge list whose order builds a token before one of its parts.", PyExc_ValueError,
        nullptr);
    if (!ImproperError) return nullptr;
    Py_INCREF(ImproperError);
    PyModule_AddObject(m, "ImproperDictionary", ImproperError);
    PyTypeObject* types[] = {&VocabType,       &PipelineType,   &StreamType,
                             &PieceStreamType, &TextStreamType, &ReferenceType};
    const char* names[] = {"Vocabulary",     "Pipeline",   "Stream",
                           "PipelineStream", "TextStream", "Reference"};
    for (int i = 0; i < 6; ++i) {
        Py_INCREF(types[i]);
        PyModule_AddObject(m, names[i], reinterpret_cast<PyObject*>(types[i]));
    }
    PyModule_AddIntConstant(m, "MAX_TOKEN_BYTES", long(MAX_TOKEN_BYTES));
    PyModule_AddIntConstant(m, "SEGMENT", long(TextStream::SEGMENT));
    return m;
}
