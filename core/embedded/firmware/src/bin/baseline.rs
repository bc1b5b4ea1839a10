//! The learner's firmware without sgld: the same stream, counters and output, so that
//! the difference of the two images' sizes is what sgld adds.

#![no_std]
#![no_main]

use sgld::online::Example;
use sgld_embedded_learner::{STREAM, Stream};
use sgld_firmware::{CORE, Counter, entry, exit, hprintln, paint_stack, peak_stack};

#[entry]
fn main() -> ! {
    paint_stack();
    let Some(counter) = Counter::start() else {
        exit(2)
    };
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
    // The learner's report formats a string, integers and the core's name as this does.
    hprintln!(
        "baseline on {}: label sum {}, {} instructions",
        CORE,
        labels,
        t1 - t0
    );
    hprintln!("stack_bytes: {}", peak_stack());
    exit(0)
}
