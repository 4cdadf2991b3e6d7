//! The run's budget at work: fuel ticks, time, memory, collection and string sizes, printed output.

use super::{EvalResult, Interp};
use crate::error::{Error, ErrorKind, LimitName};
use crate::guard;
use crate::value::Value;

pub(super) const CHECK_EVERY: u64 = 1024;

impl<'a> Interp<'a> {
    #[inline]
    pub(super) fn tick(&mut self) -> EvalResult<()> {
        self.steps += 1;
        if self.steps >= self.next_check {
            self.slow_check()?;
        }
        Ok(())
    }

    /// Bytes this run has allocated so far (all its threads), against `max_memory`.
    pub fn check_memory(&self) -> EvalResult<()> {
        Ok(self.budget.check_memory(0)?)
    }

    /// Checks that `bytes` more can be allocated before a builtin allocates them at once, so a
    /// large allocation fails before it happens instead of after.
    pub fn reserve(&self, bytes: usize) -> EvalResult<()> {
        Ok(self.budget.check_memory(bytes)?)
    }

    /// Charges native work (elements a builtin walks or builds) to the same step budget, so
    /// fuel bounds `(sort (range 1000000))` as it bounds an interpreted loop.
    #[inline]
    pub fn charge(&mut self, elements: usize) -> EvalResult<()> {
        self.steps = self.steps.saturating_add(elements as u64);
        if self.steps >= self.next_check {
            self.slow_check()?;
        }
        Ok(())
    }

    #[cold]
    pub(super) fn slow_check(&mut self) -> EvalResult<()> {
        let total = if self.speculating > 0 {
            // a speculative pass may be undone: its steps and walks are not charged to the
            // budget (where parallel branches would see them) until it succeeds; running out
            // inside it ends the pass (not marking the chain as having effects), and the chain,
            // run as written, runs out where it would
            let total = self
                .budget
                .fuel_used()
                .saturating_add(guard::held_walks())
                .saturating_add(self.steps - self.charged);
            if total >= self.limits.fuel {
                return Err(Error::exec("a speculative pass ran out of fuel").into());
            }
            total
        } else {
            let total = self.budget.add_fuel(self.steps - self.charged);
            self.charged = self.steps;
            if total >= self.limits.fuel {
                return Err(self.budget.stop(guard::fuel_error(self.limits.fuel)).into());
            }
            total
        };
        self.budget.check(self.deadline)?;
        self.check_memory()?;
        self.next_check = self.steps + CHECK_EVERY.min(self.limits.fuel - total);
        Ok(())
    }

    /// The run's time, cancellation and host interruption, checked now.
    pub fn check_time(&self) -> EvalResult<()> {
        Ok(self.budget.check(self.deadline)?)
    }

    pub fn check_coll_size(&self, n: usize) -> EvalResult<()> {
        self.check_memory()?;
        if n > self.limits.max_collection_size {
            return Err(guard::size_error(n, self.limits.max_collection_size).into());
        }
        Ok(())
    }

    /// Checks a new collection of `n` values against the size limit and the memory it takes,
    /// before it is allocated.
    pub fn alloc_values(&self, n: usize) -> EvalResult<()> {
        self.check_coll_size(n)?;
        self.reserve(guard::values_bytes(n))
    }

    /// Appends one element a builtin produces, for outputs whose size is not known in advance:
    /// each element is charged (so memory and time are checked as the output grows) and the
    /// size limit holds at every step.
    #[inline]
    pub fn push_value(&mut self, out: &mut Vec<Value>, v: Value) -> EvalResult<()> {
        if out.len() >= self.limits.max_collection_size {
            return self.check_coll_size(out.len() + 1);
        }
        out.push(v);
        self.charge(1)
    }

    pub fn check_str_size(&self, n: usize) -> EvalResult<()> {
        self.check_memory()?;
        if n > self.limits.max_string_size {
            return Err(Error::limit(
                ErrorKind::MemoryExceeded,
                LimitName::StringSize,
                format!(
                    "string of {n} bytes exceeds the limit of {} bytes (max_string_size)",
                    self.limits.max_string_size
                ),
            )
            .into());
        }
        Ok(())
    }

    /// Appends one println entry (already formatted), cut to the per-entry length.
    pub fn print_line(&mut self, mut line: String) -> EvalResult<()> {
        self.refuse_effect()?;
        let cut = crate::format::grapheme_prefix_len(&line, crate::limits::PRINT_ENTRY_CHARS);
        if cut < line.len() {
            line.truncate(cut);
            line.push_str("...");
            line.shrink_to_fit(); // keep what is shown, not the whole argument
        }
        self.output_bytes += line.len();
        if self.output_bytes > self.limits.max_output {
            return Err(Error::limit(
                ErrorKind::Execution,
                LimitName::Output,
                format!(
                    "println output exceeded the limit of {} bytes (max_output)",
                    self.limits.max_output
                ),
            )
            .with_hint("print less: a summary, a count, or the first few items (take 5 ...)")
            .into());
        }
        self.prints.push(line);
        Ok(())
    }
}
