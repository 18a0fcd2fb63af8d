"""Search: which hardware, how many GPUs and which parallel layout suit a job.

`hardware_candidates` lists the hardware options the job's constraints allow; `search_options` finds the
fastest fitting strategy on each (vectorised through `estimate.evaluate_batch`); `rank` orders the options
by the job's goal, marks ties and the Pareto front. `trainsizer.plan` turns the result into a plan.
"""

from trainsizer.search.candidates import Candidates, HardwareOption, Pins, hardware_candidates
from trainsizer.search.config import SearchConfig, load_config
from trainsizer.search.engine import OptionResult, SearchStats, search_option, search_options

__all__ = ["Candidates", "HardwareOption", "OptionResult", "Pins", "SearchConfig", "SearchStats",
           "hardware_candidates", "load_config", "search_option", "search_options"]
