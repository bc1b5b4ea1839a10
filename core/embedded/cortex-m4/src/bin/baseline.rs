//! The learner's firmware without sgld: the same stream, counters and output, so that
//! the difference of the two images' sizes is what sgld adds.

#![no_std]
#![no_main]

use cortex_m_rt::entry;
use sgld::online::Example;
use sgld_cortex_m4::{Counter, exit, hprintln, peak_stack};
use sgld_embedded_learner::{STREAM, Stream};

#[entry]
fn main() -> ! {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        exit(2)
    };
    let counter = Counter::start(peripherals.SYST);
    let mut stream = Stream::training();
    let t0 = counter.instructions();
    let mut labels = 0i64;
    for _ in 0..STREAM {
        match stream.next_example() {
            Ok(ex) => labels += ex.label() as i64,
            Err(_) => exit(3),
        }
    }
    let t1 = counter.instructions();
    hprintln!("baseline: label sum {}, {} instructions", labels, t1 - t0);
    hprintln!("stack_bytes: {}", peak_stack());
    exit(0)
}
