// SPDX-License-Identifier: GPL-2.0

//! A port's P_Key table in sysfs, which an administrator sets.
//!
//! A driver that implements [`Driver::set_pkey`] gets one more file in each port's directory,
//! `/sys/class/infiniband/DEV/ports/N/pkey_table` (mode 0644): reading it lists the table, one
//! `INDEX 0xPKEY` line per entry (`T::query_pkey`); writing `INDEX PKEY` (numbers in C
//! notation: decimal, `0x` hexadecimal or `0` octal) sets one entry through
//! [`Driver::set_pkey`]. ib_core's own `ports/N/pkeys/INDEX` files show the entries one by one.
//! On InfiniBand the subnet manager owns the table; a RoCE port has no subnet manager, so its
//! administrator sets it here.
//!
//! C header: [`include/rdma/ib_sysfs.h`](srctree/include/rdma/ib_sysfs.h)

use super::{
    device::Device,
    driver::{Adapter, Driver},
};
use crate::{bindings, c_str, error::code::*, error::Result, ffi::c_char};

/// A sysfs `show` buffer's size.
const SHOW_BUF: usize = crate::page::PAGE_SIZE;

/// Parses an unsigned number in C notation (`strtoul` with base 0): decimal, `0x` hexadecimal
/// or `0` octal.
fn parse_c_number(s: &str) -> Result<u32> {
    let (digits, radix) = if let Some(hex) = s.strip_prefix("0x").or(s.strip_prefix("0X")) {
        (hex, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    u32::from_str_radix(digits, radix).map_err(|_| EINVAL)
}

/// Parses `INDEX PKEY` (whitespace around and between them).
fn parse_entry(text: &[u8]) -> Result<(u16, u16)> {
    let text = core::str::from_utf8(text).map_err(|_| EINVAL)?;
    let mut words = text.split_ascii_whitespace();
    let (Some(index), Some(pkey), None) = (words.next(), words.next(), words.next()) else {
        return Err(EINVAL);
    };
    let index = u16::try_from(parse_c_number(index)?).map_err(|_| EINVAL)?;
    let pkey = u16::try_from(parse_c_number(pkey)?).map_err(|_| EINVAL)?;
    Ok((index, pkey))
}

/// Writes `n` in decimal at `out[*at..]`, or nothing if it does not fit.
fn put_decimal(out: &mut [u8], at: &mut usize, n: u32) {
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    let mut v = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    put(out, at, &digits[i..]);
}

/// Appends `bytes` at `out[*at..]` if they fit.
fn put(out: &mut [u8], at: &mut usize, bytes: &[u8]) {
    if let Some(dst) = out.get_mut(*at..*at + bytes.len()) {
        dst.copy_from_slice(bytes);
        *at += bytes.len();
    }
}

impl<T: Driver> Adapter<T> {
    /// The `pkey_table` attribute.
    // (`struct attribute` has more members with lockdep only.)
    #[allow(clippy::needless_update)]
    const PKEY_TABLE: bindings::ib_port_attribute = bindings::ib_port_attribute {
        attr: bindings::attribute {
            name: c_str!("pkey_table").as_char_ptr(),
            mode: 0o644,
            // SAFETY: The lockdep members of a static attribute are zero (`sysfs_attr_init`
            // is for attributes in dynamic memory).
            ..unsafe { core::mem::MaybeUninit::zeroed().assume_init() }
        },
        show: Some(Self::pkey_table_show),
        store: Some(Self::pkey_table_store),
    };

    /// The port group's attributes, null-terminated.
    const PORT_ATTRS: [*mut bindings::attribute; 2] = [
        &Self::PKEY_TABLE.attr as *const bindings::attribute as *mut bindings::attribute,
        core::ptr::null_mut(),
    ];

    /// The attributes every port of the device gets.
    const PORT_GROUP: bindings::attribute_group = bindings::attribute_group {
        attrs: &Self::PORT_ATTRS as *const [*mut bindings::attribute; 2]
            as *mut *mut bindings::attribute,
        // SAFETY: No name (the files go in the port's directory), no visibility callback, no
        // binary attributes: zero.
        ..unsafe { core::mem::MaybeUninit::zeroed().assume_init() }
    };

    /// `ib_device_ops.port_groups` of a driver with [`Driver::set_pkey`]: null-terminated.
    /// sysfs only reads these tables.
    pub(crate) const PORT_GROUPS: [*const bindings::attribute_group; 2] =
        [&Self::PORT_GROUP, core::ptr::null()];

    /// # Safety
    ///
    /// Called by ib_core's port sysfs for a registered `Device<T>` with a page-sized buffer.
    unsafe extern "C" fn pkey_table_show(
        ib: *mut bindings::ib_device,
        port: u32,
        _attr: *mut bindings::ib_port_attribute,
        buf: *mut c_char,
    ) -> isize {
        // SAFETY: The device is registered while its port files exist.
        let dev = unsafe { Device::<T>::from_raw(ib) };
        // SAFETY: sysfs passes a buffer of a page, ours for the call.
        let out = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), SHOW_BUF) };
        let len = match T::get_port_immutable(dev, port) {
            Ok(p) => p.pkey_tbl_len,
            Err(e) => return e.to_errno() as isize,
        };
        let mut at = 0;
        for index in 0..len.min(u16::MAX.into()) {
            let Ok(pkey) = T::query_pkey(dev, port, index as u16) else {
                continue;
            };
            let hex = |d: u16| b"0123456789abcdef"[usize::from(d & 0xf)];
            put_decimal(out, &mut at, index);
            put(
                out,
                &mut at,
                &[
                    b' ',
                    b'0',
                    b'x',
                    hex(pkey >> 12),
                    hex(pkey >> 8),
                    hex(pkey >> 4),
                    hex(pkey),
                    b'\n',
                ],
            );
        }
        at as isize
    }

    /// # Safety
    ///
    /// Called by ib_core's port sysfs for a registered `Device<T>` with `count` bytes at `buf`.
    unsafe extern "C" fn pkey_table_store(
        ib: *mut bindings::ib_device,
        port: u32,
        _attr: *mut bindings::ib_port_attribute,
        buf: *const c_char,
        count: usize,
    ) -> isize {
        // SAFETY: The device is registered while its port files exist.
        let dev = unsafe { Device::<T>::from_raw(ib) };
        // SAFETY: sysfs passes `count` readable bytes.
        let text = unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), count) };
        match parse_entry(text).and_then(|(index, pkey)| T::set_pkey(dev, port, index, pkey)) {
            Ok(()) => count as isize,
            Err(e) => e.to_errno() as isize,
        }
    }
}
