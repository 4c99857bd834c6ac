//! logscan._native: the common step of `logscan.format.logfile.walk_batches`, compiled.
//!
//! For batches of a few KiB a walk spends its time in one loop: unpack a v2 batch header,
//! check its size, CRC-32C the bytes the CRC covers, build a `RecordBatch`, move on. In Python
//! that loop costs about 1 us a batch beyond its CRC call; here it costs the CRC (crc-fast's,
//! folded with the CPU's carry-less multiply; no Python call per batch) and the `RecordBatch`
//! objects. It makes exactly the Python loop's decisions and stops where that loop hands over
//! to `walk_batches`' general step (legacy entries, a bad size, a failed CRC, the tail), so
//! both walks yield the same items.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple, PyType};

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

/// A new instance of ``cls`` (a tuple subclass, checked by the caller) holding ``position``,
/// ``fields`` and True, made as ``tuple.__new__(cls, ...)`` makes it, without the Python call.
fn record_batch<'py>(py: Python<'py>, cls: &Bound<'py, PyType>, position: i64, fields: &[i64; 13])
    -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: ``cls`` is a subclass of tuple, whose tp_alloc makes a tuple of FIELDS NULL items
    // (a tuple with NULL items may be traversed and freed). Each SET_ITEM fills a slot of that
    // fresh tuple once, with a new reference.
    unsafe {
        let raw = ffi::PyType_GenericAlloc(cls.as_type_ptr(), FIELDS as ffi::Py_ssize_t);
        if raw.is_null() {
            return Err(PyErr::fetch(py));
        }
        let batch = Bound::from_owned_ptr(py, raw);
        for (i, value) in std::iter::once(&position).chain(fields.iter()).enumerate() {
            let item = ffi::PyLong_FromLongLong(*value);
            if item.is_null() {
                return Err(PyErr::fetch(py));
            }
            ffi::PyTuple_SET_ITEM(raw, i as ffi::Py_ssize_t, item);
        }
        let valid = ffi::Py_True();
        ffi::Py_IncRef(valid);
        ffi::PyTuple_SET_ITEM(raw, (FIELDS - 1) as ffi::Py_ssize_t, valid);
        Ok(batch)
    }
}

/// Walk whole, valid v2 batches of ``buf[pos:end]``: at most ``limit`` of them, returned as
/// ``batch_class`` instances (position + ``base``, the header fields, True) with the position
/// the walk stopped at. It stops before the first entry that is not a v2 batch with a Length of
/// at least 49 ending by ``end``, or whose CRC fails when ``verify_crc``; and where fewer than
/// a header's bytes are left.
#[pyfunction]
#[pyo3(signature = (buf, pos, end, base, verify_crc, batch_class, limit))]
fn walk_v2<'py>(py: Python<'py>, buf: &Bound<'py, PyAny>, pos: i64, end: i64, base: i64,
                verify_crc: bool, batch_class: &Bound<'py, PyType>, limit: usize)
                -> PyResult<(Bound<'py, PyList>, i64)> {
    if !batch_class.is_subclass_of::<PyTuple>()? {
        return Err(PyTypeError::new_err("batch_class must be a subclass of tuple"));
    }
    if pos < 0 {
        return Err(PyValueError::new_err(format!("negative position {pos}")));
    }
    let view = PyBuffer::<u8>::get(buf)?;
    if !view.is_c_contiguous() {
        return Err(PyValueError::new_err("the buffer must be contiguous"));
    }
    let (start, len) = (view.buf_ptr() as *const u8, view.len_bytes());
    // SAFETY: ``view`` keeps the exporter's ``len`` bytes alive and in place (it can neither
    // resize nor free them) until it is dropped at the end of this call. Making a RecordBatch
    // may run a garbage collection, whose finalizers could write to a writable buffer, so no
    // slice of the bytes outlives the one read it is taken for.
    let bytes = |from: usize, to: usize| -> &[u8] {
        assert!(from <= to && to <= len);
        unsafe { std::slice::from_raw_parts(start.add(from), to - from) }
    };
    let end = end.min(len as i64);
    let out = PyList::empty(py);
    let mut pos = pos;
    let mut count = 0;
    while count < limit && pos + HEADER as i64 <= end {
        let at = pos as usize;
        let fields = header_fields(bytes(at, at + HEADER));
        let (length, magic, crc) = (fields[1], fields[3], fields[4]);
        let next = pos + LOG_OVERHEAD + length;
        if magic != 2 || length < MIN_V2_SIZE || next > end {
            break;
        }
        if verify_crc && crc_32c(bytes(at + CRC_START, next as usize)) != crc {
            break;
        }
        out.append(record_batch(py, batch_class, pos + base, &fields)?)?;
        count += 1;
        pos = next;
    }
    Ok((out, pos))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(walk_v2, m)?)?;
    Ok(())
}
