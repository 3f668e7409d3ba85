//! DUMP payloads (`createDumpPayload`, `verifyDumpPayload`): one value in the RDB format with a
//! footer that names the RDB version and checks the bytes.
//!
//! ```text
//!  [type: 1 B][object: value.rs][RDB version: u16 LE][CRC-64 of everything before: u64 LE]
//! ```
//! A payload is refused when it is shorter than its footer, names an RDB version newer than 10,
//! or fails its checksum (RESTORE: "DUMP payload version or checksum are wrong"), and when the
//! object does not read back (RESTORE: "Bad data format"). Bytes between the object and the
//! footer are ignored, as Redis's loader ignores them.

use crate::FormatError;
use crate::codec::{RDB_VERSION, Reader};
use crate::crc64::crc64;
use crate::value::{self, Value};
use store::View;

/// Bytes of the footer: the RDB version and the CRC-64.
const FOOTER_BYTES: usize = 10;

/// Why a payload was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadError {
    /// Too short, a newer RDB version, or a checksum that does not match.
    VersionOrChecksum,
    /// The checksum holds but the object is not a valid value.
    BadData(FormatError),
}

/// The DUMP payload of `view`, whose OBJECT ENCODING is `encoding`.
pub fn create(view: &View<'_>, encoding: &str, compress: bool) -> Vec<u8> {
    let mut out = Vec::new();
    value::write(&mut out, view, encoding, compress);
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The value a payload holds.
pub fn read(payload: &[u8]) -> Result<Value<'_>, PayloadError> {
    if payload.len() < FOOTER_BYTES {
        return Err(PayloadError::VersionOrChecksum);
    }
    let (body, footer) = payload.split_at(payload.len() - FOOTER_BYTES);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let (covered, crc) = payload.split_at(payload.len() - 8);
    if version > RDB_VERSION || crc64(0, covered).to_le_bytes() != crc {
        return Err(PayloadError::VersionOrChecksum);
    }
    let mut r = Reader::new(body);
    let t = r.u8().map_err(PayloadError::BadData)?;
    value::read(t, &mut r).map_err(PayloadError::BadData)
}

/// FUNCTION DUMP's payload: each library's code after the FUNCTION2 opcode, then the footer.
///
/// ```text
///  ([245][code: RDB string])* [RDB version: u16 LE][CRC-64: u64 LE]
/// ```
pub fn create_functions(codes: &[&[u8]], compress: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        crate::codec::put_u8(&mut out, crate::codec::opcode::FUNCTION2);
        crate::codec::put_string(&mut out, code, compress);
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Why FUNCTION RESTORE refused a payload, in Redis's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionsError {
    VersionOrChecksum,
    /// "can not read data type", "given type is not a function", "failed loading the given
    /// functions payload".
    Bad(&'static str),
}

/// The library codes a FUNCTION DUMP payload holds (`functionRestoreCommand`).
pub fn read_functions(payload: &[u8]) -> Result<Vec<Vec<u8>>, FunctionsError> {
    if payload.len() < FOOTER_BYTES {
        return Err(FunctionsError::VersionOrChecksum);
    }
    let (body, footer) = payload.split_at(payload.len() - FOOTER_BYTES);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let (covered, crc) = payload.split_at(payload.len() - 8);
    if version > RDB_VERSION || crc64(0, covered).to_le_bytes() != crc {
        return Err(FunctionsError::VersionOrChecksum);
    }
    let mut r = Reader::new(body);
    let mut codes = Vec::new();
    while !r.is_empty() {
        let t = r
            .u8()
            .map_err(|_| FunctionsError::Bad("can not read data type"))?;
        if t != crate::codec::opcode::FUNCTION2 {
            return Err(FunctionsError::Bad("given type is not a function"));
        }
        let code = r
            .string()
            .map_err(|_| FunctionsError::Bad("failed loading the given functions payload"))?;
        codes.push(code.into_owned());
    }
    Ok(codes)
}

#[cfg(test)]
mod function_tests {
    use super::*;

    #[test]
    fn function_payloads_round_trip_and_refuse_damage() {
        let code = b"#!lua name=lib\nredis.register_function('f', function() return 1 end)";
        for compress in [false, true] {
            let payload = create_functions(&[code], compress);
            assert_eq!(read_functions(&payload).unwrap(), vec![code.to_vec()]);
            let mut bad = payload.clone();
            bad[3] ^= 1;
            assert_eq!(read_functions(&bad), Err(FunctionsError::VersionOrChecksum));
        }
        assert_eq!(
            read_functions(&create_functions(&[], false)).unwrap().len(),
            0
        );
        assert_eq!(read_functions(b""), Err(FunctionsError::VersionOrChecksum));
    }
}
