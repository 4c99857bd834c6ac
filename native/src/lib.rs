//! logscan._native: the common steps of `logscan.format.logfile.walk_batches` and of
//! `logscan.format.batch.iter_records`, compiled.
//!
//! For batches of a few KiB a walk spends its time in one loop: unpack a v2 batch header,
//! check its size, CRC-32C the bytes the CRC covers, build a `RecordBatch`, move on. In Python
//! that loop costs about 1 us a batch beyond its CRC call; here it costs the CRC (crc-fast's,
//! folded with the CPU's carry-less multiply; no Python call per batch) and the `RecordBatch`
//! objects. It makes exactly the Python loop's decisions and stops where that loop hands over
//! to `walk_batches`' general step (legacy entries, a bad size, a failed CRC, the tail), so
//! both walks yield the same items.
//!
//! `records_v2` is the same bargain for a batch's records: a well-formed DefaultRecord is
//! decoded here into a `Record` (its key, value and header values copied out as bytes, header
//! keys decoded as UTF-8 with Java's replacement), and anything the Python loop would report, or
//! would compute in a way that needs more than 64 bits, stops the step before that record, so
//! the Python loop decodes it (and raises what it raises). `RecordsIter` is `iter_records`'
//! iterator over that step: a record a `next()`, the Python generator resumed only where the
//! step stops, so neither a Python frame nor a call per chunk is paid per record.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyList, PyString, PyTuple, PyType};
use std::ffi::c_char;

/// A v2 batch header: BaseOffset int64, Length int32, PartitionLeaderEpoch int32, Magic int8,
/// CRC uint32, Attributes int16, LastOffsetDelta int32, BaseTimestamp int64, MaxTimestamp int64,
/// ProducerId int64, ProducerEpoch int16, BaseSequence int32, RecordsCount int32.
const HEADER: usize = 61;
/// Base offset and length: the framing every magic shares.
const LOG_OVERHEAD: i64 = 12;
/// The smallest Length of a v2 batch: a header and no records.
const MIN_V2_SIZE: i64 = HEADER as i64 - LOG_OVERHEAD;
/// The CRC covers the batch from its attributes to its end.
const CRC_START: usize = 21;
/// A RecordBatch: its position, the 13 header fields, crc_valid.
const FIELDS: usize = 15;

fn crc_32c(bytes: &[u8]) -> i64 {
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, bytes) as i64
}

fn be<const N: usize>(h: &[u8], at: usize) -> [u8; N] {
    h[at..at + N].try_into().expect("within the header")
}

/// The header fields in RecordBatch order, after its position.
fn header_fields(h: &[u8]) -> [i64; 13] {
    [
        i64::from_be_bytes(be(h, 0)),
        i32::from_be_bytes(be(h, 8)).into(),
        i32::from_be_bytes(be(h, 12)).into(),
        (h[16] as i8).into(),
        u32::from_be_bytes(be(h, 17)).into(),
        i16::from_be_bytes(be(h, 21)).into(),
        i32::from_be_bytes(be(h, 23)).into(),
        i64::from_be_bytes(be(h, 27)),
        i64::from_be_bytes(be(h, 35)),
        i64::from_be_bytes(be(h, 43)),
        i16::from_be_bytes(be(h, 51)).into(),
        i32::from_be_bytes(be(h, 53)).into(),
        i32::from_be_bytes(be(h, 57)).into(),
    ]
}

/// A step's arguments checked: ``class`` (of the items it makes, named ``name`` in the error)
/// is a subclass of tuple, and ``buf`` exports contiguous bytes, held in place by the view.
fn contiguous_view(buf: &Bound<'_, PyAny>, class: &Bound<'_, PyType>, name: &str) -> PyResult<PyBuffer<u8>> {
    if !class.is_subclass_of::<PyTuple>()? {
        return Err(PyTypeError::new_err(format!("{name} must be a subclass of tuple")));
    }
    contiguous(buf)
}

/// ``buf``'s view, which must be of contiguous bytes (held in place while it lives).
fn contiguous(buf: &Bound<'_, PyAny>) -> PyResult<PyBuffer<u8>> {
    let view = PyBuffer::<u8>::get(buf)?;
    if !view.is_c_contiguous() {
        return Err(PyValueError::new_err("the buffer must be contiguous"));
    }
    Ok(view)
}

/// A new instance of ``cls`` (a tuple subclass, checked by the caller) holding ``items``, made
/// as ``tuple.__new__(cls, items)`` makes it, without the Python call.
fn tuple_instance<'py, const N: usize>(py: Python<'py>, cls: &Bound<'py, PyType>, items: [Bound<'py, PyAny>; N])
    -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: ``cls`` is a subclass of tuple, whose tp_alloc makes a tuple of N NULL items (a
    // tuple with NULL items may be traversed and freed). Each SET_ITEM fills a slot of that
    // fresh tuple once, with a new reference (``into_ptr`` hands ours over).
    unsafe {
        let raw = ffi::PyType_GenericAlloc(cls.as_type_ptr(), N as ffi::Py_ssize_t);
        if raw.is_null() {
            return Err(PyErr::fetch(py));
        }
        let instance = Bound::from_owned_ptr(py, raw);
        for (i, item) in items.into_iter().enumerate() {
            ffi::PyTuple_SET_ITEM(raw, i as ffi::Py_ssize_t, item.into_ptr());
        }
        Ok(instance)
    }
}

/// ``instance`` (a tuple_instance whose items are ints, bools, strings or None) no longer
/// tracked by the garbage collector: such a tuple can be in no reference cycle. CPython
/// untracks a plain tuple like it at its first collection, but not an instance of a subclass
/// (a RecordBatch, a BatchFact), so every collection would traverse each of the facts and
/// batches a reader holds (a tenth of the time of a walk of large batches).
fn untracked(instance: Bound<'_, PyAny>) -> Bound<'_, PyAny> {
    // SAFETY: the instance was tracked by its allocation (PyType_GenericAlloc) and is fully
    // made; untracking it only keeps collections from visiting it.
    unsafe { ffi::PyObject_GC_UnTrack(instance.as_ptr().cast()) };
    instance
}

/// A RecordBatch (``cls``): ``position``, the header ``fields`` and True (crc_valid).
fn record_batch<'py>(py: Python<'py>, cls: &Bound<'py, PyType>, position: i64, fields: &[i64; 13])
    -> PyResult<Bound<'py, PyAny>> {
    let items: [Bound<'py, PyAny>; FIELDS] = std::array::from_fn(|i| match i {
        0 => int(py, position),
        i if i < FIELDS - 1 => int(py, fields[i - 1]),
        _ => PyBool::new(py, true).to_owned().into_any(),
    });
    tuple_instance(py, cls, items).map(untracked)
}

fn int(py: Python<'_>, value: i64) -> Bound<'_, PyAny> {
    let Ok(int) = value.into_pyobject(py);
    int.into_any()
}

/// Walk whole, valid v2 batches of ``buf[pos:end]``: at most ``limit`` of them, returned as
/// ``batch_class`` instances (position + ``base``, the header fields, True) with the position
/// the walk stopped at. It stops before the first entry that is not a v2 batch with a Length of
/// at least 49 ending by ``end``, or whose CRC fails when ``verify_crc``; and where fewer than
/// a header's bytes are left.
#[pyfunction]
#[pyo3(signature = (buf, pos, end, base, verify_crc, batch_class, limit))]
#[allow(clippy::too_many_arguments)]
fn walk_v2<'py>(py: Python<'py>, buf: &Bound<'py, PyAny>, pos: i64, end: i64, base: i64,
                verify_crc: bool, batch_class: &Bound<'py, PyType>, limit: usize)
                -> PyResult<(Bound<'py, PyList>, i64)> {
    let held = Held::new(buf, batch_class, "batch_class", pos)?;
    let end = end.min(held.len as i64);
    let out = PyList::empty(py);
    let mut pos = pos;
    let mut count = 0;
    while count < limit {
        let Some((fields, next)) = v2_step(&held, pos, end, verify_crc) else { break };
        out.append(record_batch(py, batch_class, pos + base, &fields)?)?;
        count += 1;
        pos = next;
    }
    Ok((out, pos))
}

/// A walk's buffer: its bytes held alive and in place by its view (it can neither resize nor
/// free them) until this is dropped, read a slice at a time. Making a Python object may run
/// a garbage collection, whose finalizers could write to a writable buffer, so no slice of
/// the bytes outlives the one read it is taken for.
struct Held {
    _view: PyBuffer<u8>,
    start: *const u8,
    len: usize,
}

impl Held {
    /// ``buf`` of a step walking from ``pos`` (not negative) and making ``class`` instances
    /// (``name`` in the error; contiguous_view's checks).
    fn new(buf: &Bound<'_, PyAny>, class: &Bound<'_, PyType>, name: &str, pos: i64) -> PyResult<Self> {
        contiguous_view(buf, class, name)?;
        Self::of(buf, pos)
    }

    /// ``buf`` of a step walking from ``pos`` (not negative) that makes no instances.
    fn of(buf: &Bound<'_, PyAny>, pos: i64) -> PyResult<Self> {
        if pos < 0 {
            return Err(PyValueError::new_err(format!("negative position {pos}")));
        }
        let view = contiguous(buf)?;
        let (start, len) = (view.buf_ptr() as *const u8, view.len_bytes());
        Ok(Held { _view: view, start, len })
    }

    #[inline(always)]
    fn bytes(&self, from: usize, to: usize) -> &[u8] {
        assert!(from <= to && to <= self.len);
        // SAFETY: the view keeps the ``len`` bytes from ``start`` alive and in place while
        // self lives; [from, to) is within them.
        unsafe { std::slice::from_raw_parts(self.start.add(from), to - from) }
    }
}

/// One step of the walk at ``pos`` of ``held`` (``end`` at most its length): the header
/// fields of the whole v2 batch there and where the next entry starts; None where there is
/// no such batch (fewer than a header's bytes left, not magic 2, a Length below 49, an end
/// past ``end``) or, when ``verify_crc``, its CRC-32C (over the bytes from its attributes to
/// its end, in place) does not match: there walk_batches' general step takes over.
#[inline(always)]
fn v2_step(held: &Held, pos: i64, end: i64, verify_crc: bool) -> Option<([i64; 13], i64)> {
    if pos + HEADER as i64 > end {
        return None;
    }
    let at = pos as usize;
    let fields = header_fields(held.bytes(at, at + HEADER));
    let (length, magic, crc) = (fields[1], fields[3], fields[4]);
    let next = pos + LOG_OVERHEAD + length;
    if magic != 2 || length < MIN_V2_SIZE || next > end {
        return None;
    }
    if verify_crc && crc_32c(held.bytes(at + CRC_START, next as usize)) != crc {
        return None;
    }
    Some((fields, next))
}

/// A zig-zag varint at ``at`` of ``data[..end]`` as ByteUtils reads it (at most ``max_bytes``
/// bytes, a ``bits``-bit value): (value, next position); None where the Python reader fails or
/// would drop bits past the width (the Python loop then reads the record).
#[inline(always)]
fn varint(data: &[u8], at: usize, end: usize, max_bytes: usize, bits: u32) -> Option<(i64, usize)> {
    // One or two bytes, the common cases: below 2^14, which fits every width.
    let zigzag = |raw: u64| ((raw >> 1) as i64) ^ -((raw & 1) as i64);
    let end = end.min(data.len());
    if at < end {
        let b0 = data[at];
        if b0 < 0x80 {
            return Some((zigzag(b0 as u64), at + 1));
        }
        if at + 1 < end && max_bytes >= 2 {
            let b1 = data[at + 1];
            if b1 < 0x80 {
                return Some((zigzag((b0 & 0x7F) as u64 | (b1 as u64) << 7), at + 2));
            }
        }
    }
    long_varint(data, at, end, max_bytes, bits)
}

/// varint's general case: a varint of any length.
fn long_varint(data: &[u8], at: usize, end: usize, max_bytes: usize, bits: u32) -> Option<(i64, usize)> {
    let mut raw: u64 = 0;
    let mut shift = 0u32;
    let mut p = at;
    while p < end && p < at + max_bytes {
        let b = data[p];
        let part = (b & 0x7F) as u64;
        if shift >= 64 || (part << shift) >> shift != part {
            return None;
        }
        raw |= part << shift;
        p += 1;
        if b < 0x80 {
            if bits < 64 && raw >> bits != 0 {
                return None;
            }
            return Some((((raw >> 1) as i64) ^ -((raw & 1) as i64), p));
        }
        shift += 7;
    }
    None
}

/// Where a byte string is: None for null (a negative length).
type Span = Option<(usize, usize)>;

/// A varint-length-prefixed byte string (Utils.readBytes): (its span, next position), or None
/// where the Python reader fails.
#[inline]
fn bytes_field(data: &[u8], p: usize, end: usize) -> Option<(Span, usize)> {
    let (n, p) = varint(data, p, end, 5, 32)?;
    if n < 0 {
        return Some((None, p));
    }
    let stop = p + n as usize;
    if stop > end {
        return None;
    }
    Some((Some((p, stop)), stop))
}

/// One well-formed DefaultRecord, its byte strings as spans of the data.
struct RawRecord {
    offset_delta: i64,
    timestamp_delta: i64,
    attributes: i8,
    key: Span,
    value: Span,
    /// Where its headers start, and how many (each a non-null key and a value, checked).
    headers: (usize, usize),
    next: usize,
}

/// A header of a well-formed record at ``p`` (checked by raw_record): (key span, value span,
/// next position).
fn header(data: &[u8], p: usize, end: usize) -> Option<((usize, usize), Span, usize)> {
    let (key, p) = bytes_field(data, p, end)?;
    let (value, p) = bytes_field(data, p, end)?;
    Some((key?, value, p)) // a null header key: the Python loop reports it
}

/// The record at ``at`` of ``data[..end]``, or None for one the Python loop must read.
#[inline]
fn raw_record(data: &[u8], at: usize, end: usize) -> Option<RawRecord> {
    let (body, p) = varint(data, at, end, 5, 32)?;
    if body < 0 {
        return None;
    }
    let body_end = p + body as usize;
    if body_end > end || p >= body_end {
        return None;
    }
    let attributes = data[p] as i8;
    let (timestamp_delta, p) = varint(data, p + 1, body_end, 10, 64)?;
    let (offset_delta, p) = varint(data, p, body_end, 5, 32)?;
    let (key, p) = bytes_field(data, p, body_end)?;
    let (value, p) = bytes_field(data, p, body_end)?;
    let (count, headers_at) = varint(data, p, body_end, 5, 32)?;
    if count < 0 || count as usize > body_end - headers_at {
        return None;
    }
    let mut p = headers_at;
    for _ in 0..count {
        (_, _, p) = header(data, p, body_end)?;
    }
    if p != body_end {
        return None;
    }
    Some(RawRecord { offset_delta, timestamp_delta, attributes, key, value, headers: (headers_at, count as usize),
                     next: p })
}

/// Decode up to ``limit`` records of ``data`` (a v2 batch's record bytes, decompressed) from
/// ``pos``, as ``record_class`` instances (Record's fields): what the loop of
/// ``logscan.format.batch._decode_records`` makes of them, field for field. Returns them with
/// the position after the last. It stops before the first record that loop would report, or
/// whose offset or timestamp passes 64 bits, or whose sequence wraps past INT32_MAX (the
/// loop's increment_sequence): the Python loop reads that one.
#[pyfunction]
#[pyo3(signature = (data, pos, limit, base_offset, base_timestamp, base_sequence, log_append_time, record_class))]
#[allow(clippy::too_many_arguments)]
fn records_v2<'py>(py: Python<'py>, data: &Bound<'py, PyAny>, pos: usize, limit: usize, base_offset: i64,
                   base_timestamp: i64, base_sequence: i64, log_append_time: Option<i64>,
                   record_class: &Bound<'py, PyType>) -> PyResult<(Bound<'py, PyList>, usize)> {
    let view = contiguous_view(data, record_class, "record_class")?;
    let (start, len) = (view.buf_ptr() as *const u8, view.len_bytes());
    // SAFETY: as in walk_v2, ``view`` keeps the bytes alive and in place until it is dropped at
    // the end of this call, and no slice outlives the one read or copy it is taken for (making
    // an object may run a collection whose finalizers could write to a writable buffer).
    let bytes = |from: usize, to: usize| -> &[u8] {
        assert!(from <= to && to <= len);
        unsafe { std::slice::from_raw_parts(start.add(from), to - from) }
    };
    let batch = BatchBase { base_offset, base_timestamp, base_sequence, log_append_time };
    let out = PyList::empty(py);
    let mut pos = pos;
    while out.len() < limit && pos < len {
        let Some((record, next)) = record_at(py, &bytes, len, pos, &batch, record_class)? else { break };
        out.append(record)?;
        pos = next;
    }
    Ok((out, pos))
}

/// What a batch's header gives each of its records: the bases of its offsets, timestamps and
/// sequences, and its MaxTimestamp where the timestamp type is LogAppendTime.
struct BatchBase {
    base_offset: i64,
    base_timestamp: i64,
    base_sequence: i64,
    log_append_time: Option<i64>,
}

/// The ``record_class`` instance of the record at ``pos`` of the ``len`` bytes ``bytes`` reads
/// (their span from, to), with the position after it: records_v2's step for one record. None
/// where it stops (see records_v2), before that record.
fn record_at<'py, 'b, F>(py: Python<'py>, bytes: &F, len: usize, pos: usize, batch: &BatchBase,
                         record_class: &Bound<'py, PyType>) -> PyResult<Option<(Bound<'py, PyAny>, usize)>>
where F: Fn(usize, usize) -> &'b [u8] {
    let byte_string = |span: Span| -> Bound<'py, PyAny> {
        match span {
            None => py.None().into_bound(py),
            Some((a, b)) => PyBytes::new(py, bytes(a, b)).into_any(),
        }
    };
    let Some(raw) = raw_record(bytes(0, len), pos, len) else { return Ok(None) };
    let Some(offset) = batch.base_offset.checked_add(raw.offset_delta) else { return Ok(None) };
    let timestamp = match batch.log_append_time {
        Some(t) => t,
        // Java's sum: no overflow check, a wrap (primitives.java_long)
        None => batch.base_timestamp.wrapping_add(raw.timestamp_delta),
    };
    let sequence = if batch.base_sequence >= 0 { batch.base_sequence + raw.offset_delta } else { -1 };
    if sequence > i32::MAX as i64 {
        return Ok(None);
    }
    let (mut at, count) = raw.headers;
    let headers = if count == 0 {
        PyTuple::empty(py) // the one empty tuple, as the Python loop's ``()``
    } else {
        let mut headers = Vec::with_capacity(count);
        for _ in 0..count {
            let Some(((a, b), value, next)) = header(bytes(0, len), at, raw.next) else { return Ok(None) };
            at = next;
            let key = bytes(a, b);
            // RecordHeader decodes keys with Java's UTF-8 decoder, which substitutes bad bytes:
            // the error handler logscan.format.primitives registers (one U+FFFD per malformed
            // sequence, Java's rule), as the Python loop decodes them.
            // SAFETY: the key is read for this call only; the result is a new reference or NULL.
            let key = unsafe {
                Bound::from_owned_ptr_or_err(py, ffi::PyUnicode_DecodeUTF8(
                    key.as_ptr() as *const c_char, key.len() as ffi::Py_ssize_t,
                    c"logscan-java-utf8".as_ptr()))?
            };
            headers.push(PyTuple::new(py, [key, byte_string(value)])?);
        }
        PyTuple::new(py, headers)?
    };
    let items = [
        int(py, offset),
        int(py, raw.offset_delta),
        int(py, timestamp),
        int(py, raw.timestamp_delta),
        int(py, raw.attributes as i64),
        int(py, sequence),
        byte_string(raw.key),
        byte_string(raw.value),
        headers.into_any(),
        int(py, (raw.next - pos) as i64),
    ];
    Ok(Some((tuple_instance(py, record_class, items)?, raw.next)))
}

/// A run of a batch's records that ``RecordsIter`` reads itself: ``left`` records at most of
/// the first ``len`` bytes of ``data`` (record bytes, immutable), from ``pos``.
struct Stretch {
    /// The bytes object, kept alive (and bytes never change) while ``start`` and ``len`` are used.
    _data: Py<PyBytes>,
    /// The address of its first byte (an address, so that the iterator stays Send).
    start: usize,
    len: usize,
    pos: usize,
    left: usize,
    batch: BatchBase,
}

/// ``logscan.format.batch.iter_records``' iterator where the module is built: the records of a
/// generator (``_decode_records`` in its stretch mode), whose every item it passes on except
/// one of type ``stretch_class`` exactly (a tuple: data, pos, end, left, base_offset,
/// base_timestamp, base_sequence, log_append_time): the records of ``data[pos:end]`` it decodes itself, one a ``next()`` (as
/// records_v2 would, and nothing ahead of the reader), and where it stops (all ``left`` read,
/// the end of the data, or a record records_v2 stops before) it sends ``(pos, left)`` back into
/// the generator, which reads on from there. So the generator's frame runs once a stretch, not
/// once a record; everything the generator does (decompression on first ``next()``, errors and
/// their locations, the check of the bytes after the records) is unchanged. A stretch it
/// cannot take (a base past 64 bits) goes back untaken, and the generator reads its records.
#[pyclass(module = "logscan._native")]
struct RecordsIter {
    source: Py<PyAny>,
    stretch_class: Py<PyType>,
    record_class: Py<PyType>,
    stretch: Option<Stretch>,
    done: bool,
}

#[pymethods]
impl RecordsIter {
    #[new]
    fn new(source: &Bound<'_, PyAny>, stretch_class: &Bound<'_, PyType>, record_class: &Bound<'_, PyType>)
        -> PyResult<Self> {
        if !record_class.is_subclass_of::<PyTuple>()? {
            return Err(PyTypeError::new_err("record_class must be a subclass of tuple"));
        }
        // SAFETY: a type check of a live object. PyIter_Send calls an iterator's tp_iternext.
        if unsafe { ffi::PyIter_Check(source.as_ptr()) } == 0 {
            return Err(PyTypeError::new_err("source must be an iterator"));
        }
        Ok(RecordsIter { source: source.clone().unbind(), stretch_class: stretch_class.clone().unbind(),
                         record_class: record_class.clone().unbind(), stretch: None, done: false })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(slf: &Bound<'py, Self>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = slf.py();
        // What goes back into the generator: (position, records left) where a stretch stopped.
        let mut back: Option<(usize, usize)> = None;
        loop {
            let source = {
                let mut this = slf.borrow_mut();
                let this = &mut *this;
                if this.done {
                    return Ok(None);
                }
                if let Some(stretch) = this.stretch.as_mut() {
                    // SAFETY: ``start`` and ``len`` are the bytes of the bytes object the
                    // stretch holds a reference to; a bytes object's contents never change.
                    let data = unsafe { std::slice::from_raw_parts(stretch.start as *const u8, stretch.len) };
                    if stretch.left > 0 && stretch.pos < data.len() {
                        let view = |from: usize, to: usize| -> &[u8] { &data[from..to] };
                        let found = record_at(py, &view, data.len(), stretch.pos, &stretch.batch,
                                              this.record_class.bind(py))?;
                        if let Some((record, next)) = found {
                            stretch.pos = next;
                            stretch.left -= 1;
                            return Ok(Some(record));
                        }
                    }
                    back = Some((stretch.pos, stretch.left));
                    this.stretch = None;
                }
                this.source.bind(py).clone()
            };
            // No borrow of this iterator is held while the generator runs. PyIter_Send is
            // ``send``, ``next`` for None, and says the generator returned without raising
            // StopIteration.
            let arg = match back.take() {
                Some(back) => back.into_pyobject(py)?.into_any(),
                None => py.None().into_bound(py),
            };
            let mut result: *mut ffi::PyObject = std::ptr::null_mut();
            // SAFETY: both are live references held across the call; ``result`` receives a new
            // reference (PYGEN_NEXT or PYGEN_RETURN) or stays NULL with an exception set.
            let sent = unsafe { ffi::PyIter_Send(source.as_ptr(), arg.as_ptr(), &mut result) };
            let item = match sent {
                ffi::PySendResult::PYGEN_ERROR => return Err(PyErr::fetch(py)),
                ffi::PySendResult::PYGEN_RETURN => {
                    // SAFETY: the generator's return value, a new reference, dropped here.
                    drop(unsafe { Bound::from_owned_ptr(py, result) });
                    slf.borrow_mut().done = true;
                    return Ok(None);
                }
                // SAFETY: the yielded item, a new reference.
                ffi::PySendResult::PYGEN_NEXT => unsafe { Bound::from_owned_ptr(py, result) },
            };
            let mut this = slf.borrow_mut();
            if !item.get_type().is(this.stretch_class.bind(py)) {
                return Ok(Some(item));
            }
            type Fields<'py> = (Bound<'py, PyBytes>, usize, usize, usize, i64, i64, i64, Option<i64>);
            match item.extract::<Fields<'py>>() {
                Ok((data, pos, len, left, base_offset, base_timestamp, base_sequence, log_append_time)) => {
                    if len > data.as_bytes().len() {
                        return Err(PyValueError::new_err("a stretch's end must be within its bytes"));
                    }
                    let start = data.as_bytes().as_ptr() as usize;
                    let batch = BatchBase { base_offset, base_timestamp, base_sequence, log_append_time };
                    this.stretch = Some(Stretch { _data: data.unbind(), start, len, pos, left, batch });
                }
                // A base past 64 bits (a caller's RecordBatch._replace can make one), or data
                // not bytes: the stretch goes back untaken, for the generator's loop to read.
                Err(_) => back = Some((item.get_item(1)?.extract()?, item.get_item(3)?.extract()?)),
            }
        }
    }
}

/// The one record of a COMMIT or ABORT batch as a broker writes it
/// (MemoryRecords.withEndTransactionMarker, uncompressed), 17 bytes: Length varint (16),
/// Attributes int8, TimestampDelta varint, OffsetDelta varint, KeyLength varint (4), the
/// ControlRecordType key v0 (Version int16, Type int16), ValueLength varint (6), the
/// EndTransactionMarker value v0 (Version int16, CoordinatorEpoch int32), header count varint
/// (0). Zig-zag varints: 16 is 0x20, 4 is 0x08, 6 is 0x0c; a one-byte varint is below 0x80.
const MARKER_RECORD: usize = 17;
/// The Length of a COMMIT or ABORT batch as a broker writes it: a header and its one record.
const MARKER_BATCH_LENGTH: i64 = MIN_V2_SIZE + MARKER_RECORD as i64;
/// Attributes: the control and transactional flags, the timestamp type (LogAppendTime), the
/// codec bits and the delete-horizon flag.
const CONTROL_FLAG: i64 = 0x20;
const TRANSACTIONAL_FLAG: i64 = 0x10;
const LOG_APPEND_TIME: i64 = 0x08;
const CODEC_BITS: i64 = 0x07;
/// KIP-534: the cleaner stored a delete horizon in BaseTimestamp.
const DELETE_HORIZON_FLAG: i64 = 0x40;
const NO_SEQUENCE: i64 = -1;
/// control_type_id where a batch has no control record type: not a control batch, or one the
/// cleaner emptied (count 0).
const NO_CONTROL_TYPE: i16 = -1;

/// DefaultRecordBatch.incrementSequence as logscan.format.batch.increment_sequence reads it
/// (sequences wrap from INT32_MAX to 0), with NO_SEQUENCE kept: a batch's last sequence.
fn last_sequence(sequence: i64, delta: i64) -> i64 {
    let max = i32::MAX as i64;
    if 0 <= sequence && sequence <= max - delta {
        sequence + delta
    } else if sequence == NO_SEQUENCE {
        NO_SEQUENCE
    } else if sequence > max - delta {
        (delta - (max - sequence) - 1) as i32 as i64
    } else {
        (sequence + delta) as i32 as i64
    }
}

/// ``(type id, coordinator epoch, timestamp delta)`` of a marker record laid out as a broker
/// writes it (MARKER_RECORD) with one-byte deltas, versions >= 0 and a COMMIT or ABORT type,
/// which the record decoder, decode_control_key and decode_end_txn_marker read the same way:
/// None for any other bytes.
fn marker_record(r: &[u8]) -> Option<(i16, i32, i64)> {
    let (length, ts_delta, offset_delta, key_length) = (r[0], r[2], r[3], r[4]);
    let key_version = i16::from_be_bytes(be(r, 5));
    let type_id = i16::from_be_bytes(be(r, 7));
    let (value_length, value_version) = (r[9], i16::from_be_bytes(be(r, 10)));
    let coordinator_epoch = i32::from_be_bytes(be(r, 12));
    if length != 0x20 || ts_delta >= 0x80 || offset_delta >= 0x80 || key_length != 0x08 || value_length != 0x0C
        || r[16] != 0 || key_version < 0 || value_version < 0 || (type_id != 0 && type_id != 1) {
        return None;
    }
    let ts_delta = ts_delta as i64;
    Some((type_id, coordinator_epoch, (ts_delta >> 1) ^ -(ts_delta & 1)))
}

/// What a control batch's fact takes from its one record: Ok(Some((type id, coordinator
/// epoch, marker timestamp))) for a COMMIT or ABORT batch laid out as a broker writes it (one
/// uncompressed MARKER_RECORD), Ok(None) for a batch without a control record (not a control
/// batch, or one the cleaner emptied), Err(()) for any other batch, whose fact the reference
/// (logscan.scan.replica.batch_fact, through the record decoder) makes: ``record`` is the batch's
/// bytes after its header, as many as the buffer holds.
fn marker_fact(attributes: i64, length: i64, records: i64, base_timestamp: i64, max_timestamp: i64, record: &[u8])
    -> Result<Option<(i16, i32, i64)>, ()> {
    if attributes & CONTROL_FLAG == 0 || records <= 0 {
        return Ok(None);
    }
    if records != 1 || length != MARKER_BATCH_LENGTH || attributes & CODEC_BITS != 0 || record.len() < MARKER_RECORD {
        return Err(());
    }
    let (type_id, epoch, ts_delta) = marker_record(record).ok_or(())?;
    // Java's sum wraps (primitives.java_long)
    let ts = if attributes & LOG_APPEND_TIME != 0 { max_timestamp } else { base_timestamp.wrapping_add(ts_delta) };
    Ok(Some((type_id, epoch, ts)))
}

/// The fact of one v2 batch: FACT_COLUMNS' fields (logscan.format.compiled), each as wide as
/// an int64 until a column narrows it to its own type.
struct Fact {
    position: i64,
    base_offset: i64,
    last_offset: i64,
    partition_leader_epoch: i64,
    attributes: i64,
    base_timestamp: i64,
    max_timestamp: i64,
    producer_id: i64,
    producer_epoch: i64,
    base_sequence: i64,
    last_sequence: i64,
    records_count: i64,
    size_in_bytes: i64,
    control_type_id: i64,
    coordinator_epoch: i64,
    marker_timestamp: i64,
}

impl Fact {
    /// The fact of the v2 batch at ``position`` (in the log) with the header ``f``
    /// (header_fields' order) and ``marker`` (marker_fact's Ok): None where the reference makes
    /// it some other way (a last offset or a size past 64 bits).
    fn of(position: i64, f: &[i64; 13], marker: Option<(i16, i32, i64)>) -> Option<Fact> {
        let (base_offset, length, last_delta, base_sequence) = (f[0], f[1], f[6], f[11]);
        let (control_type_id, coordinator_epoch, marker_timestamp) = match marker {
            Some((type_id, epoch, ts)) => (type_id as i64, epoch as i64, ts),
            None => (NO_CONTROL_TYPE as i64, -1, -1),
        };
        Some(Fact {
            position,
            base_offset,
            last_offset: base_offset.checked_add(last_delta)?,
            partition_leader_epoch: f[2],
            attributes: f[5],
            base_timestamp: f[7],
            max_timestamp: f[8],
            producer_id: f[9],
            producer_epoch: f[10],
            base_sequence,
            last_sequence: last_sequence(base_sequence, last_delta),
            records_count: f[12],
            size_in_bytes: length.checked_add(LOG_OVERHEAD)?,
            control_type_id,
            coordinator_epoch,
            marker_timestamp,
        })
    }
}

/// One column of ``facts`` (``value`` of each, narrowed to T) as native-endian bytes: Arrow's
/// layout of a fixed-width column.
fn column<'py, T: Copy>(py: Python<'py>, facts: &[Fact], value: impl Fn(&Fact) -> T) -> PyResult<Bound<'py, PyBytes>> {
    let width = std::mem::size_of::<T>();
    PyBytes::new_with(py, facts.len() * width, |bytes| {
        for (slot, fact) in bytes.chunks_exact_mut(width).zip(facts) {
            let v = value(fact);
            // SAFETY: T is a plain integer type: its value is its ``width`` bytes, no padding.
            slot.copy_from_slice(unsafe { std::slice::from_raw_parts(&v as *const T as *const u8, width) });
        }
        Ok(())
    })
}

/// ``facts`` as FACT_COLUMNS' columns, each as native-endian bytes.
fn fact_columns<'py>(py: Python<'py>, facts: &[Fact]) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, [
        column(py, facts, |f| f.position)?, column(py, facts, |f| f.base_offset)?,
        column(py, facts, |f| f.last_offset)?, column(py, facts, |f| f.partition_leader_epoch as i32)?,
        column(py, facts, |f| f.attributes as i16)?, column(py, facts, |f| f.base_timestamp)?,
        column(py, facts, |f| f.max_timestamp)?, column(py, facts, |f| f.producer_id)?,
        column(py, facts, |f| f.producer_epoch as i16)?, column(py, facts, |f| f.base_sequence as i32)?,
        column(py, facts, |f| f.last_sequence as i32)?, column(py, facts, |f| f.records_count as i32)?,
        column(py, facts, |f| f.size_in_bytes)?, column(py, facts, |f| f.control_type_id as i16)?,
        column(py, facts, |f| f.coordinator_epoch as i32)?, column(py, facts, |f| f.marker_timestamp)?,
    ])
}

/// The facts the scan's replay needs of a run of whole, valid v2 batches of ``buf[pos:end]``
/// (``buf`` a window of the log starting at byte ``base``), at most ``limit``, handed on as
/// the reader can take them best, decided once the run is walked: fewer than ``few`` as a
/// list of ``fact_class`` instances (BatchFact's fields: logscan.scan.replica.batch_fact's;
/// no Python call per batch, and a field equal to the previous fact's, a producer's id or a
/// batch size, shares its int object), else as columns (FACT_COLUMNS of
/// logscan.format.compiled, each as native-endian bytes: no Python object per batch). Returns
/// the list or the columns, how many batches, the position the run stopped at and the
/// largest of their max timestamps (the smallest int64 for none). It walks as walk_v2 does
/// with every CRC checked (stopping where that walk stops), and stops too before a batch whose
/// fact the reference (batch_fact and the offset check before it) makes some other way: a
/// last offset past 64 bits, a control batch with records other than one COMMIT or ABORT
/// record laid out as a broker writes it (fact_v2's None), so the reference walk from there
/// reads it.
#[pyfunction]
#[pyo3(signature = (buf, pos, end, base, limit, few=0, fact_class=None))]
#[allow(clippy::too_many_arguments)]
fn facts_v2<'py>(py: Python<'py>, buf: &Bound<'py, PyAny>, pos: i64, end: i64, base: i64, limit: usize, few: usize,
                 fact_class: Option<&Bound<'py, PyType>>) -> PyResult<(Bound<'py, PyAny>, usize, i64, i64)> {
    let held = match fact_class {
        Some(class) => Held::new(buf, class, "fact_class", pos)?,
        None if few == 0 => Held::of(buf, pos)?,
        None => return Err(PyTypeError::new_err("a list of facts (few > 0) needs a fact_class")),
    };
    let end = end.min(held.len as i64);
    // As many as a run can hold, up to a table's (logscan.scan.replica.FACT_TABLE_ROWS): more grow.
    let room = ((end - pos).max(0) as usize / HEADER + 1).min(limit).min(4096);
    let mut facts: Vec<Fact> = Vec::with_capacity(room);
    let (mut pos, mut max_timestamp) = (pos, i64::MIN);
    while facts.len() < limit {
        let Some((f, next)) = v2_step(&held, pos, end, true) else { break };
        let record = held.bytes(pos as usize + HEADER, next as usize);
        let Ok(marker) = marker_fact(f[5], f[1], f[12], f[7], f[8], record) else { break };
        let Some(fact) = Fact::of(pos + base, &f, marker) else { break };
        max_timestamp = max_timestamp.max(fact.max_timestamp);
        facts.push(fact);
        pos = next;
    }
    drop(held);
    let count = facts.len();
    let out = match fact_class {
        Some(class) if count < few => {
            let mut last: [Option<(i64, Bound<'py, PyAny>)>; FACT_FIELDS] = std::array::from_fn(|_| None);
            let mut int_of = |field: usize, value: i64| match &last[field] {
                Some((held, object)) if *held == value => object.clone(),
                _ => {
                    let object = int(py, value);
                    last[field] = Some((value, object.clone()));
                    object
                }
            };
            let list = PyList::empty(py);
            for fact in &facts {
                list.append(fact_object(py, class, fact, &mut int_of)?)?;
            }
            list.into_any()
        }
        _ => fact_columns(py, &facts)?.into_any(),
    };
    Ok((out, count, pos, max_timestamp))
}

/// The fact logscan.scan.replica.batch_fact makes of one v2 batch, ``batch`` (a RecordBatch,
/// already walked) read from ``buf``, a window of the log starting at byte ``base``: a
/// ``fact_class`` instance (BatchFact's fields), or None where the reference makes it some
/// other way (a control batch with records other than one COMMIT or ABORT record laid out as a
/// broker writes it, an offset or timestamp past 64 bits): batch_fact then reads the batch
/// through the record decoder. The batch at a time form of facts_v2's rule, for the walk.
#[pyfunction]
#[pyo3(signature = (buf, batch, base, fact_class))]
fn fact_v2<'py>(py: Python<'py>, buf: &Bound<'py, PyAny>, batch: &Bound<'py, PyTuple>, base: i64,
                fact_class: &Bound<'py, PyType>) -> PyResult<Option<Bound<'py, PyAny>>> {
    if !fact_class.is_subclass_of::<PyTuple>()? {
        return Err(PyTypeError::new_err("fact_class must be a subclass of tuple"));
    }
    if batch.len() != FIELDS {
        return Err(PyValueError::new_err(format!("a RecordBatch has {FIELDS} fields, not {}", batch.len())));
    }
    // The fields up to records_count; one that is not an int of 64 bits (never so from the
    // header decoders) is the reference's, with Python's ints.
    let mut f = [0i64; FIELDS - 1];
    for (i, slot) in f.iter_mut().enumerate() {
        match batch.get_item(i).and_then(|item| item.extract::<i64>()) {
            Ok(value) => *slot = value,
            Err(_) => return Ok(None),
        }
    }
    let (position, length, attributes) = (f[0], f[2], f[6]);
    let (base_timestamp, max_timestamp, records) = (f[8], f[9], f[13]);
    let marker = if attributes & CONTROL_FLAG != 0 && records > 0 {
        // Any other buffer (not bytes-like, not contiguous) or a batch outside it: the reference's.
        let Ok(view) = PyBuffer::<u8>::get(buf) else { return Ok(None) };
        if !view.is_c_contiguous() {
            return Ok(None);
        }
        let len = view.len_bytes() as i64;
        let Some(from) = position.checked_sub(base).and_then(|at| at.checked_add(HEADER as i64)) else { return Ok(None) };
        if from < 0 || from > len {
            return Ok(None);
        }
        let to = (from + MARKER_RECORD as i64).min(len);
        // SAFETY: ``view`` keeps the exporter's ``len`` bytes alive and in place until it is
        // dropped at the end of this block, and no Python code runs while the slice is read.
        let record = unsafe {
            std::slice::from_raw_parts((view.buf_ptr() as *const u8).add(from as usize), (to - from) as usize)
        };
        match marker_fact(attributes, length, records, base_timestamp, max_timestamp, record) {
            Ok(marker) => marker,
            Err(()) => return Ok(None),
        }
    } else {
        None
    };
    let header: [i64; 13] = f[1..].try_into().expect("a RecordBatch's header fields");
    let Some(fact) = Fact::of(position, &header, marker) else { return Ok(None) };
    fact_object(py, fact_class, &fact, &mut |_, value| int(py, value)).map(Some)
}

/// BatchFact's fields.
const FACT_FIELDS: usize = 14;

/// ``fact`` as a ``fact_class`` instance (BatchFact's fields), each int field made by
/// ``int_of(its index, its value)``. fact_v2's and facts_v2's.
fn fact_object<'py>(py: Python<'py>, fact_class: &Bound<'py, PyType>, fact: &Fact,
                    int_of: &mut dyn FnMut(usize, i64) -> Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let control_type = match fact.control_type_id {
        1 => intern!(py, "COMMIT").clone().into_any(),
        0 => intern!(py, "ABORT").clone().into_any(),
        _ => py.None().into_bound(py),
    };
    let flag = |mask: i64| PyBool::new(py, fact.attributes & mask != 0).to_owned().into_any();
    let items: [Bound<'py, PyAny>; FACT_FIELDS] = [
        int_of(0, fact.base_offset),
        int_of(1, fact.last_offset),
        int_of(2, fact.producer_id),
        int_of(3, fact.producer_epoch),
        int_of(4, fact.base_sequence),
        int_of(5, fact.last_sequence),
        int_of(6, fact.max_timestamp),
        flag(TRANSACTIONAL_FLAG),
        flag(CONTROL_FLAG),
        int_of(9, fact.records_count),
        int_of(10, fact.size_in_bytes),
        control_type,
        int_of(12, fact.coordinator_epoch),
        int_of(13, fact.marker_timestamp),
    ];
    tuple_instance(py, fact_class, items).map(untracked)
}

/// The batches table's header columns of one v2 batch (logscan.scan.rows.header_values, in
/// HEADER_COLUMNS' order), from ``batch``, a RecordBatch: its position, magic, the name of its
/// codec (``codec_names`` by the attributes' codec bits), of its timestamp type
/// (``timestamp_names``: CreateTime, LogAppendTime), its partition leader epoch, base timestamp,
/// delete horizon (the base timestamp where the attributes' delete-horizon bit is set, else
/// None), CRC and crc_valid. The names are the caller's, the values the batch's own objects.
#[pyfunction]
#[pyo3(signature = (batch, codec_names, timestamp_names))]
fn header_v2<'py>(py: Python<'py>, batch: &Bound<'py, PyTuple>, codec_names: &Bound<'py, PyTuple>,
                  timestamp_names: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyTuple>> {
    if batch.len() != FIELDS || codec_names.len() != (CODEC_BITS + 1) as usize || timestamp_names.len() != 2 {
        return Err(PyValueError::new_err(format!(
            "a RecordBatch of {FIELDS} fields, {} codec names and 2 timestamp type names", CODEC_BITS + 1)));
    }
    let attributes: i64 = batch.get_item(6)?.extract()?;
    let base_timestamp = batch.get_item(8)?;
    let delete_horizon = if attributes & DELETE_HORIZON_FLAG != 0 { base_timestamp.clone() } else { py.None().into_bound(py) };
    PyTuple::new(py, [
        batch.get_item(0)?,
        batch.get_item(4)?,
        codec_names.get_item((attributes & CODEC_BITS) as usize)?,
        timestamp_names.get_item(usize::from(attributes & LOG_APPEND_TIME != 0))?,
        batch.get_item(3)?,
        base_timestamp,
        delete_horizon,
        batch.get_item(5)?,
        batch.get_item(14)?,
    ])
}

/// Big-endian reads of ``data`` at ``at`` that are None past its end.
fn be_at<const N: usize>(data: &[u8], at: usize) -> Option<[u8; N]> {
    data.get(at..at.checked_add(N)?)?.try_into().ok()
}

/// A string of ``data[at..at + size]`` in valid UTF-8 (strict: malformed bytes are for the
/// generic reader, which replaces them as Java does), or None.
fn utf8_at<'py>(py: Python<'py>, data: &[u8], at: usize, size: usize) -> Option<Bound<'py, PyString>> {
    let text = std::str::from_utf8(data.get(at..at.checked_add(size)?)?).ok()?;
    Some(PyString::new(py, text))
}

/// A length or count at ``at``: a one-byte unsigned varint (N+1) when ``flexible``, else an
/// int16 (``wide``: int32), and the position after it; None for a null, a longer varint or a
/// cut.
fn length_at(data: &[u8], at: usize, flexible: bool, wide: bool) -> Option<(i64, usize)> {
    let n = if flexible {
        let b = *data.get(at)?;
        if b >= 0x80 {
            return None;
        }
        return if b == 0 { None } else { Some((b as i64 - 1, at + 1)) };
    } else if wide {
        i32::from_be_bytes(be_at(data, at)?) as i64
    } else {
        i16::from_be_bytes(be_at(data, at)?) as i64
    };
    if n < 0 {
        return None;
    }
    Some((n, at + if wide { 4 } else { 2 }))
}

/// TransactionPartitions' ``count`` elements at ``at`` as (topic, partition) pairs, and the
/// position after them, or None where they are not laid out as txn_entry_v2 takes them.
fn txn_partitions<'py>(py: Python<'py>, value: &[u8], at: usize, count: usize, flexible: bool)
    -> PyResult<Option<(Bound<'py, PyTuple>, usize)>> {
    let mut parts: Vec<Bound<'py, PyTuple>> = Vec::new();
    let mut p = at;
    for _ in 0..count {
        let Some((size, q)) = length_at(value, p, flexible, false) else { return Ok(None) };
        let Some(topic) = utf8_at(py, value, q, size as usize) else { return Ok(None) };
        let Some((n, q)) = length_at(value, q + size as usize, flexible, true) else { return Ok(None) };
        let n = n as usize;
        if n.checked_mul(4).and_then(|b| q.checked_add(b)).is_none_or(|stop| stop > value.len()) {
            return Ok(None);
        }
        for i in 0..n {
            let Some(id) = be_at::<4>(value, q + 4 * i) else { return Ok(None) };
            parts.push(PyTuple::new(py, [topic.clone().into_any(), int(py, i32::from_be_bytes(id) as i64)])?);
        }
        p = q + 4 * n;
        if flexible {
            if value.get(p) != Some(&0) {
                return Ok(None); // the element's tagged fields: none
            }
            p += 1;
        }
    }
    Ok(Some((PyTuple::new(py, parts)?, p)))
}

/// The entry logscan.format.txnlog.read_generic makes of a ``__transaction_state`` record laid
/// out as a coordinator writes it: a ``entry_class`` instance (TransactionLogEntry's fields),
/// or None for anything else, which the generic reader then reads (with its errors). Taken:
/// ``key`` and ``value`` of type bytes (or a None value, a tombstone), key type 0 with its id in
/// valid UTF-8; a value v0 or v1 whose strings are valid UTF-8 and, in v1, whose lengths,
/// counts and tags are one-byte varints, whose partitions carry no tagged field, and whose
/// known tagged fields have their own sizes (in any order, the last of a repeated tag wins,
/// unknown tags passed over). Trailing bytes are ignored, as by the generic reader (and Kafka).
/// ``defaults`` is an entry's fields with the tagged fields at their schema defaults (the
/// others unused), ``tags`` each known tag as (tag, size, index in the entry): the schema's,
/// from Python.
#[pyfunction]
#[pyo3(signature = (key, value, entry_class, defaults, tags))]
fn txn_entry_v2<'py>(py: Python<'py>, key: &Bound<'py, PyAny>, value: &Bound<'py, PyAny>,
                     entry_class: &Bound<'py, PyType>, defaults: &Bound<'py, PyTuple>,
                     tags: Vec<(u8, usize, usize)>) -> PyResult<Option<Bound<'py, PyAny>>> {
    const ENTRY_FIELDS: usize = 13;
    if !entry_class.is_subclass_of::<PyTuple>()? || defaults.len() != ENTRY_FIELDS
        || tags.iter().any(|&(_, size, index)| !matches!(size, 2 | 4 | 8) || index >= ENTRY_FIELDS) {
        return Err(PyValueError::new_err(format!(
            "entry_class must be a subclass of tuple, defaults {ENTRY_FIELDS} fields, tags (tag, 2, 4 or 8, index)")));
    }
    let Ok(key) = key.cast_exact::<PyBytes>() else { return Ok(None) };
    let key = key.as_bytes();
    let (Some(record_type), Some(size)) = (be_at::<2>(key, 0), be_at::<2>(key, 2)) else { return Ok(None) };
    let (record_type, size) = (i16::from_be_bytes(record_type), i16::from_be_bytes(size));
    if record_type != 0 || size < 0 {
        return Ok(None);
    }
    let Some(tid) = utf8_at(py, key, 4, size as usize) else { return Ok(None) };
    let mut entry: Vec<Bound<'py, PyAny>> = Vec::with_capacity(ENTRY_FIELDS);
    if value.is_none() {
        entry.push(tid.into_any());
        entry.resize(ENTRY_FIELDS, py.None().into_bound(py));
        return tuple_instance::<ENTRY_FIELDS>(py, entry_class, entry.try_into().expect("13 fields")).map(Some);
    }
    let Ok(value) = value.cast_exact::<PyBytes>() else { return Ok(None) };
    let value = value.as_bytes();
    // Version int16, ProducerId int64, ProducerEpoch int16, TransactionTimeoutMs int32,
    // TransactionStatus int8, then the partitions' count.
    const HEAD: usize = 17;
    if value.len() <= HEAD {
        return Ok(None);
    }
    let version = i16::from_be_bytes(be(value, 0));
    let producer_id = i64::from_be_bytes(be(value, 2));
    let epoch = i16::from_be_bytes(be(value, 10));
    let timeout = i32::from_be_bytes(be(value, 12));
    let status = value[16] as i8;
    let flexible = match version {
        0 => false,
        1 => true,
        _ => return Ok(None),
    };
    // The count: -1 (or, in v0, any negative int32) is a null array.
    let (count, pos) = if flexible {
        let b = value[HEAD];
        if b >= 0x80 {
            return Ok(None);
        }
        (b as i64 - 1, HEAD + 1)
    } else {
        let Some(count) = be_at::<4>(value, HEAD) else { return Ok(None) };
        (i32::from_be_bytes(count) as i64, HEAD + 4)
    };
    let (parts, mut pos) = if count >= 0 {
        if count as usize > value.len() - pos {
            return Ok(None);
        }
        match txn_partitions(py, value, pos, count as usize, flexible)? {
            Some((parts, next)) => (parts.into_any(), next),
            None => return Ok(None),
        }
    } else {
        (py.None().into_bound(py), pos)
    };
    let (Some(last_update), Some(start)) = (be_at::<8>(value, pos), be_at::<8>(value, pos + 8)) else { return Ok(None) };
    pos += 16;
    let mut entry: [Bound<'py, PyAny>; ENTRY_FIELDS] = std::array::from_fn(|i| match i {
        0 => tid.clone().into_any(),
        1 => int(py, version as i64),
        2 => int(py, producer_id),
        5 => int(py, epoch as i64),
        7 => int(py, timeout as i64),
        8 => int(py, status as i64),
        9 => parts.clone(),
        10 => int(py, i64::from_be_bytes(last_update)),
        11 => int(py, i64::from_be_bytes(start)),
        _ => defaults.get_item(i).expect("13 defaults"),
    });
    if flexible {
        let Some(&count) = value.get(pos) else { return Ok(None) };
        if count >= 0x80 {
            return Ok(None);
        }
        pos += 1;
        for _ in 0..count {
            let (Some(&tag), Some(&size)) = (value.get(pos), value.get(pos + 1)) else { return Ok(None) };
            if tag >= 0x80 || size >= 0x80 {
                return Ok(None);
            }
            pos += 2;
            let size = size as usize;
            if pos + size > value.len() {
                return Ok(None);
            }
            if let Some(&(_, width, index)) = tags.iter().find(|&&(known, _, _)| known == tag) {
                if size != width {
                    return Ok(None); // the generic reader reads the field's own width
                }
                let field = &value[pos..pos + size];
                entry[index] = int(py, match width {
                    2 => i16::from_be_bytes(be(field, 0)) as i64,
                    4 => i32::from_be_bytes(be(field, 0)) as i64,
                    _ => i64::from_be_bytes(be(field, 0)),
                });
            }
            pos += size;
        }
    }
    tuple_instance(py, entry_class, entry).map(Some)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(walk_v2, m)?)?;
    m.add_function(wrap_pyfunction!(records_v2, m)?)?;
    m.add_function(wrap_pyfunction!(facts_v2, m)?)?;
    m.add_function(wrap_pyfunction!(fact_v2, m)?)?;
    m.add_function(wrap_pyfunction!(header_v2, m)?)?;
    m.add_function(wrap_pyfunction!(txn_entry_v2, m)?)?;
    m.add_class::<RecordsIter>()?;
    Ok(())
}
