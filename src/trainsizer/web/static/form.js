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
        // A field with a message stays in view whatever is chosen.
        f.classList.toggle("hidden", g.getAttribute("data-kind") !== kind && !f.classList.contains("invalid"));
      });
    });
    var method = form.querySelector("select[name='method']").value;
    form.querySelectorAll("[data-field='lora.rank'], [data-field='lora.targets']").forEach(function (f) {
      f.classList.toggle("hidden", method !== "lora" && method !== "qlora" && !f.classList.contains("invalid"));
    });
  }
  form.addEventListener("change", update);
  update();
})();
