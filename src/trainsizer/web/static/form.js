// Shows the inputs that matter for the current choices; the form works without it (all inputs shown).
(function () {
  "use strict";
  var form = document.getElementById("job-form");
  if (!form) { return; }
  function checked(name) {
    var el = form.querySelector("input[name='" + name + "']:checked");
    return el ? el.value : "";
  }
  function update() {
    var kind = checked("data_kind") || "tokens";
    form.querySelectorAll(".group[data-kind]").forEach(function (g) {
      g.querySelectorAll(".field").forEach(function (f) {
        f.classList.toggle("hidden", g.getAttribute("data-kind") !== kind);
      });
    });
    var method = form.querySelector("select[name='method']").value;
    var rank = form.querySelector("[data-field='lora.rank']");
    rank.classList.toggle("hidden", method !== "lora" && method !== "qlora");
  }
  form.addEventListener("change", update);
  update();
})();
